"""server/onnxport/repository/atomic.py: the one write path into the repository and its one lock,
exercised by real processes writing the same files at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from onnxport.bench.bench_run import save_latest
from onnxport.check import verdict_file
from onnxport.errors import RepositoryError
from onnxport.repository import atomic, layout
from onnxport.repository.store import Repository, empty_manifest

WRITERS = 4


def spawn(code: str, *args: object) -> subprocess.Popen:
    """A separate Python process running `code` (argv[1:] = args): a writer of its own, with its own locks."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen, timeout: float = 120) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-2000:]
    return out


ROWS = 30_000  # ~400 KB of JSON: a write takes several system calls, so a reader could catch half of one


def whole(data: dict) -> bool:
    """True when `data` is one writer's one write, all of it (its rows name that writer and round)."""
    return data["rows"] == [f"{data['writer']}-{data['round']}-{i:06d}" for i in range(ROWS)]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(f"*{atomic.TEMP_SUFFIX}"))


# --------------------------------------------------------------------------- the write


def test_concurrent_writers_never_show_a_reader_half_a_file(tmp_path):
    target = tmp_path / "shared.json"
    atomic.write_json_atomically(target, {"writer": -1, "round": 0, "rows": []})
    writers = [
        spawn(
            """
        import sys
        from onnxport.repository import atomic
        path, writer, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        for round_ in range(15):
            data = {"writer": writer, "round": round_, "rows": [f"{writer}-{round_}-{i:06d}" for i in range(rows)]}
            atomic.write_json_atomically(path, data)
    """,
            target,
            writer,
            ROWS,
        )
        for writer in range(WRITERS)
    ]
    reads = 0
    while any(w.poll() is None for w in writers):
        data = json.loads(target.read_text())  # never a JSONDecodeError: always one whole file
        assert data["writer"] == -1 or whole(data)
        reads += 1
    for writer in writers:
        finish(writer)
    assert reads > 0
    assert json.loads(target.read_text())["round"] == 14  # every writer's last write was its round 14
    assert leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.json"]


def test_a_failed_write_leaves_the_previous_file_and_no_temporary_file(tmp_path):
    target = tmp_path / "bench.json"
    atomic.write_json_atomically(target, {"version": 1})
    before = target.read_bytes()
    with pytest.raises(RuntimeError, match="refused"):
        with atomic.atomic_file(target) as handle:
            handle.write(b'{"version": 2, "half": ')
            raise RuntimeError("refused")  # a hash that does not match, a full disk, a signal
    with pytest.raises(TypeError):
        atomic.write_json_atomically(target, {"not JSON": object()})
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]


def test_a_killed_writer_leaves_the_previous_file_and_the_next_locked_writer_clears_its_temporary_file(tmp_path):
    repository = Repository(tmp_path / "repository")
    repository.root.mkdir()
    atomic.write_json_atomically(repository.manifest_path, {"version": 1})
    before = repository.manifest_path.read_bytes()
    killed = spawn(
        """
        import os, sys
        from onnxport.repository import atomic
        with atomic.atomic_file(sys.argv[1]) as handle:
            handle.write(b'{"version": 2, "half": ')
            handle.flush()
            print("written", flush=True)
            sys.stdin.read()  # killed here, mid-write
    """,
        repository.manifest_path,
    )
    assert killed.stdout.readline().strip() == "written"
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    assert repository.manifest_path.read_bytes() == before
    assert len(leftovers(repository.root)) == 1  # nobody could clean up after a SIGKILL...
    with repository.transaction():
        assert leftovers(repository.root) == []  # ...until the next writer holds the lock
    assert repository.manifest_path.read_bytes() == before


def test_the_file_is_in_place_whole_with_a_final_newline(tmp_path):
    target = tmp_path / "conformance.json"
    atomic.write_json_atomically(target, {"b": 1, "a": [1, 2]}, sort_keys=True)
    assert target.read_text() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'
    atomic.write_bytes_atomically(target, b"bytes")
    assert target.read_bytes() == b"bytes"


def test_the_mode_follows_the_umask_like_any_file_we_write(tmp_path):
    # A static host or a server running as another user reads the repository: not 0600 like mkstemp's.
    old = os.umask(0o022)
    try:
        atomic.write_bytes_atomically(tmp_path / "a", b"x")
        (tmp_path / "b").write_bytes(b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "a").stat().st_mode & 0o777 == (tmp_path / "b").stat().st_mode & 0o777 == 0o644


# --------------------------------------------------------------------------- the lock


COUNTER = """
    import json, sys
    from pathlib import Path
    from onnxport.repository import atomic
    root = Path(sys.argv[1])
    for _ in range(int(sys.argv[2])):
        with atomic.lock(root, wait=True):  # read, add one, write: lost updates unless serialized
            count = json.loads((root / "counter.json").read_text())["count"]
            atomic.write_json_atomically(root / "counter.json", {"count": count + 1})
"""


def test_the_lock_serializes_writers_in_separate_processes(tmp_path):
    atomic.write_json_atomically(tmp_path / "counter.json", {"count": 0})
    writers = [spawn(COUNTER, tmp_path, 25) for _ in range(WRITERS)]
    for writer in writers:
        finish(writer)
    assert json.loads((tmp_path / "counter.json").read_text()) == {"count": WRITERS * 25}
    assert leftovers(tmp_path) == []


HOLDER = """
    import sys
    from onnxport.repository import atomic
    with atomic.lock(sys.argv[1]):
        print("held", flush=True)
        sys.stdin.readline()
"""


def hold(root: Path) -> subprocess.Popen:
    holder = spawn(HOLDER, root)
    assert holder.stdout.readline().strip() == "held"
    return holder


def release(holder: subprocess.Popen) -> None:
    holder.stdin.write("\n")
    finish(holder)


def test_a_second_writer_is_refused_without_wait_and_waits_with_it(tmp_path):
    holder = hold(tmp_path)
    try:
        with pytest.raises(RepositoryError, match="being written by another onnxport process"):
            with atomic.lock(tmp_path):
                pass
        said: list[str] = []
        waiting, acquired = threading.Event(), threading.Event()

        def waiter() -> None:
            with atomic.lock(tmp_path, wait=True, waiting=lambda message: (said.append(message), waiting.set())):
                acquired.set()

        thread = threading.Thread(target=waiter)
        thread.start()
        assert waiting.wait(30)  # it found the lock held and said so before blocking...
        assert not acquired.is_set()  # ...and blocks while the other process holds it
    finally:
        release(holder)
    thread.join(timeout=30)
    assert acquired.is_set()
    assert said == [f"{tmp_path} is being written by another onnxport process; waiting for it to finish"]


def test_the_lock_is_the_repositorys_lock_file_and_dies_with_its_holder(tmp_path):
    holder = hold(tmp_path)
    assert (tmp_path / layout.LOCK_FILE).is_file()
    with pytest.raises(RepositoryError):
        with Repository(tmp_path).transaction():  # a build takes the same lock
            pass
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=30)
    with Repository(tmp_path).lock():  # the kernel released it with the process
        pass


def test_every_writer_takes_the_one_lock(tmp_path):
    """A build's transaction, check's verdicts and bench's figures all wait for (or are refused by) the same lock."""
    (tmp_path / layout.MANIFEST_FILE).write_text(json.dumps(empty_manifest()))
    holder = hold(tmp_path)
    done: list[str] = []
    bench_waits, check_waits = threading.Event(), threading.Event()
    threads = [
        threading.Thread(
            target=lambda: (
                save_latest(tmp_path, {"schema": "onnxport.bench"}, say=lambda message: bench_waits.set()),
                done.append("bench"),
            )
        ),
        threading.Thread(
            target=lambda: (
                verdict_file.record(tmp_path, {"results": []}, {}, {}, warn=lambda message: check_waits.set()),
                done.append("verdicts"),
            )
        ),
    ]
    try:
        for thread in threads:
            thread.start()
        assert bench_waits.wait(30) and check_waits.wait(30)  # both found the lock held: neither has written
        assert done == [] and not (tmp_path / layout.BENCH_FILE).exists()
        assert not (tmp_path / layout.VERDICTS_FILE).exists()
        with pytest.raises(RepositoryError, match="another onnxport process"):
            with Repository(tmp_path).transaction():
                pass
    finally:
        release(holder)
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(done) == ["bench", "verdicts"]
    assert json.loads((tmp_path / layout.BENCH_FILE).read_text()) == {"schema": "onnxport.bench"}
    assert json.loads((tmp_path / layout.VERDICTS_FILE).read_text())["verdicts"] == []


VERDICT_WRITER = """
    import sys
    from onnxport.check import verdict_file
    root, model = sys.argv[1], sys.argv[2]
    sha = {m: str(i) * 64 for i, m in enumerate("abcd")}
    current = {"models": {m: {"variants": {"fp32": {"status": "ok", "sha256": s}}} for m, s in sha.items()}}
    for runtime in ("wasm", "wasm-1t", "webgpu") * 5:
        row = {"model": model, "variant": "fp32", "runtime": runtime, "status": "pass", "outputs": {}}
        verdict_file.record(root, {"results": [row], "browser": {"user_agent": runtime}}, current, current)
"""


def test_checks_finishing_together_keep_each_others_verdicts(tmp_path):
    checks = [spawn(VERDICT_WRITER, tmp_path, model) for model in "abcd"]
    for check in checks:
        finish(check)
    entries = json.loads((tmp_path / layout.VERDICTS_FILE).read_text())["verdicts"]
    assert sorted((e["model"], e["runtime"]) for e in entries) == sorted(
        (m, r) for m in "abcd" for r in ("wasm", "wasm-1t", "webgpu")
    )
    assert leftovers(tmp_path) == []
