"""An interrupted `onnxport check` says what actually ran: per engine, the rows of its page that finished out of
those it planned, counted by runtime and status, with the engine's real WebGPU adapter and threads (before, an
engine stopped mid-page was summed up as `5 pass (WebGPU: none; threads: no)` just after a WebGPU row passed)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections import Counter

import pytest
from small_models import two_model_repository

from fixtures.check import lines_of, read_until
from onnxport.harness import engines

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return two_model_repository(tmp_path_factory.mktemp("interrupted"))


@pytest.mark.parametrize("engine", ["chromium", "firefox"])
def test_an_interrupted_check_counts_what_ran_per_engine_and_runtime(repository, tmp_path, engine):
    if engine not in engines.installed():
        pytest.skip(f"{engine} is not installed here (`make browsers` installs it)")
    report_path = tmp_path / "report.json"
    check = subprocess.Popen(
        [sys.executable, "-m", "onnxport", "--repository", str(repository), "check", "--browsers", engine,
         "--runtimes", "wasm,webgpu", "--json", str(report_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    err_lines: queue.Queue = queue.Queue()
    out: list[str] = []
    readers = [threading.Thread(target=lines_of, args=(check.stderr, err_lines), daemon=True),
               threading.Thread(target=lambda: out.append(check.stdout.read()), daemon=True)]
    for reader in readers:
        reader.start()
    err: list[str] = []
    try:
        # The first WebGPU row follows fp32's wasm rows, with many rows after it: interrupted right after it.
        read_until(err_lines, err, lambda line: f"[{engine}] mlp-a fp32 webgpu: pass" in line, "first webgpu row")
        check.send_signal(signal.SIGINT)
        code = check.wait(timeout=90)
        for reader in readers:
            reader.join(10)
        while (line := err_lines.get(timeout=5)) is not None:
            err.append(line)
    finally:
        if check.poll() is None:
            os.killpg(check.pid, signal.SIGKILL)
            check.wait()
        check.stdout.close()
        check.stderr.close()
    text, printed = "".join(err), "".join(out)
    assert code == 3, f"exit {code}\n{printed}\n{text}"
    report = json.loads(report_path.read_text())
    assert report["incomplete"] == "interrupted"
    rows = [r for r in report["results"] if r.get("browser") == engine]
    planned = report["plans"][engine]["rows"]
    assert 2 <= len(rows) < planned, (len(rows), planned)
    counts = Counter((r["runtime"], r["status"]) for r in rows)
    assert counts[("webgpu", "pass")] >= 1, counts
    by_runtime = "; ".join(f"{runtime} " + ", ".join(f"{n} {status}" for (rt, status), n in sorted(counts.items())
                                                     if rt == runtime)
                           for runtime in dict.fromkeys(r["runtime"] for r in rows))
    identity = report["browsers"][engine]
    line = next((line for line in printed.splitlines() if line.startswith(f"{engine} {identity['version']}: ")), None)
    print(f"\n{engine} interrupted after {len(rows)} of {planned} rows: {line}")
    assert line is not None, printed
    # What ran, of what was planned, by runtime; the adapter and threads the page had, not "none" and "no".
    assert line.startswith(f"{engine} {identity['version']}: {len(rows)} of {planned} page rows ran: {by_runtime} "
                           "(WebGPU: a software adapter"), line
    assert identity["webgpu"] is True and identity["adapter"]["fallback"] is True, identity
    assert f"threads: {identity['threads']['why']})" in line and identity["threads"]["most"] >= 2, line
    assert text.count(f"  [{engine}] ") == len(rows)  # every row streamed is in the report and counted
