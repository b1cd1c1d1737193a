"""A killed import's staging folder is removed when the next writer starts, whichever writer it is.

The attack: `onnxport import` killed with SIGKILL mid-way left `.staging/` (its staged artifacts) in
the repository until the next build or import. Every writer takes the repository's lock
(repository/atomic.py: build, import, remove, check's verdicts, bench's figures, a replica's sync), and
now clears what a killed writer left as soon as it holds it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from onnxport.bench.bench_run import save_latest
from onnxport.check import verdict_file
from onnxport.project import PROJECT_ROOT
from onnxport.repository import atomic, layout
from onnxport.repository.store import Repository


def chain(nodes: int) -> onnx.ModelProto:
    made = [
        helper.make_node("Relu", [f"v{i}" if i else "x"], ["y" if i == nodes - 1 else f"v{i + 1}"], name=f"n{i}")
        for i in range(nodes)
    ]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        made, "chain", [value("x", onnx.TensorProto.FLOAT, ["n", 4])], [value("y", onnx.TensorProto.FLOAT, ["n", 4])]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def staged_files(repository: Path) -> list[Path]:
    return [p for p in (repository / layout.STAGING_DIR).rglob("*") if p.is_file()]


def import_then_kill(repository: Path, model: Path, name: str) -> list[Path]:
    """Start a real `onnxport import`, SIGKILL it once it has staged a file; returns what it left."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONNXPORT_")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(repository),
            "import",
            str(model),
            "--name",
            name,
            "--quiet",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    try:
        while not staged_files(repository):  # mid-way: the fp32 variant is staged, the rest is still to come
            assert process.poll() is None, f"the import ended before it staged anything: {process.stderr.read()!r}"
            assert time.monotonic() < deadline, "the import staged nothing in 300 s"
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    return staged_files(repository)


@pytest.fixture
def repository_with_a_model(tmp_path, run_cli) -> Path:
    path = tmp_path / "small.onnx"
    onnx.save(chain(3), path)
    repository = tmp_path / "repository"
    code, _, err = run_cli("--repository", repository, "import", path, "--name", "small", "--quiet", "--forms", "none")
    assert code == 0, err
    return repository


def test_a_killed_import_is_cleared_by_the_next_writer(tmp_path, repository_with_a_model, run_cli):
    repository = repository_with_a_model
    model = tmp_path / "chain.onnx"
    onnx.save(chain(3_000), model)
    manifest = (repository / "manifest.json").read_bytes()
    artifacts = sorted(p.name for p in (repository / "artifacts").iterdir())
    # The next writer: bench writing its figures (what `onnxport bench` does last; before, only a build,
    # import or remove cleared), then a remove that is refused (no such model) but starts as a writer.
    figures = []  # printed at the end: run_cli drains what is printed before it
    for next_writer in ("bench", "remove"):
        start = time.perf_counter()
        left = import_then_kill(repository, model, "chain")
        figures.append(
            f"killed after {time.perf_counter() - start:.1f} s, leaving {len(left)} file(s) in .staging/; "
            f"cleared by {next_writer}"
        )
        assert left, "the killed import left its staged files"
        assert (repository / "manifest.json").read_bytes() == manifest, "the manifest was never touched"
        if next_writer == "bench":
            save_latest(repository, {"models": {}}, say=lambda _: None)
        else:
            code, _, err = run_cli("--repository", repository, "remove", "no-such-model")
            assert code == 2, err
        assert not (repository / layout.STAGING_DIR).exists(), f"{next_writer} left the killed import's files"
        assert (repository / "manifest.json").read_bytes() == manifest
        assert sorted(p.name for p in (repository / "artifacts").iterdir()) == artifacts
    print("\n" + "\n".join(figures))


def _leave_leftovers(repository: Path) -> list[Path]:
    """What killed writers leave: a staging folder with a half model, temporary files of cut writes."""
    half = repository / layout.STAGING_DIR / "tmpkilled" / "artifacts" / "half.onnx"
    half.parent.mkdir(parents=True)
    half.write_bytes(b"half a model")
    temporaries = [
        repository / f".manifest.json.123.abcd{atomic.TEMP_SUFFIX}",
        repository / layout.ARTIFACTS_DIR / f".x.onnx.123.abcd{atomic.TEMP_SUFFIX}",
    ]
    for path in temporaries:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"cut short")
    return [half, *temporaries]


def _lock(root: Path) -> None:
    with atomic.lock(root):
        pass


def _transaction(root: Path) -> None:
    with Repository(root).transaction():
        pass


WRITERS = {
    "the lock itself": _lock,
    "a transaction (build, import, remove)": _transaction,
    "bench saving its figures": lambda root: save_latest(root, {"models": {}}, say=lambda _: None),
    "check recording its verdicts": lambda root: verdict_file.record(
        root, {"results": []}, {"models": {}}, {"models": {}}, warn=lambda _: None
    ),
}


@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_clears_what_a_killed_writer_left(repository_with_a_model, writer):
    repository = repository_with_a_model
    left = _leave_leftovers(repository)
    WRITERS[writer](repository)
    assert not any(p.exists() for p in left), [str(p) for p in left if p.exists()]
    assert not staged_files(repository)
    assert (repository / "manifest.json").is_file()


def test_a_refused_writer_leaves_the_holders_staging(repository_with_a_model):
    """Only a writer that holds the lock clears: a second one, refused, touches nothing."""
    repository = Repository(repository_with_a_model)
    with repository.transaction() as holder:
        (holder.staging / "being-written.onnx").write_bytes(np.zeros(4, np.float32).tobytes())
        with pytest.raises(Exception, match="another onnxport process"):
            with atomic.lock(repository.root):
                pass
        assert (holder.staging / "being-written.onnx").is_file()
