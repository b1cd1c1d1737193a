"""An interrupted `onnxport check` says what actually ran: per engine, the rows of its page that finished out of
those it planned, counted by runtime and status, with the engine's real WebGPU adapter and threads (before, an
engine stopped mid-page was summed up as `5 pass (WebGPU: none; threads: no)` just after a WebGPU row passed)."""

from __future__ import annotations

import json
import signal
import sys
from collections import Counter

import pytest
from small_models import two_model_repository

from fixtures.check import running_check
from onnxport.harness import browser_engines

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return two_model_repository(tmp_path_factory.mktemp("interrupted"))


@pytest.mark.parametrize("engine", ["chromium", "firefox"])
def test_an_interrupted_check_counts_what_ran_per_engine_and_runtime(repository, tmp_path, engine):
    if engine not in browser_engines.installed():
        pytest.skip(f"{engine} is not installed here (`make browsers` installs it)")
    report_path = tmp_path / "report.json"
    with running_check(
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(repository),
            "check",
            "--browsers",
            engine,
            "--runtimes",
            "wasm,webgpu",
            "--json",
            str(report_path),
        ]
    ) as check:
        # The first WebGPU row follows fp32's wasm rows, with many rows after it: interrupted right after it.
        check.until(lambda line: f"[{engine}] mlp-a fp32 webgpu: pass" in line, "first webgpu row")
        code = check.stop(signal.SIGINT)
    err, out = check.err, check.out
    text, printed = "".join(err), "".join(out)
    assert code == 3, f"exit {code}\n{printed}\n{text}"
    report = json.loads(report_path.read_text())
    assert report["incomplete"] == "interrupted"
    rows = [r for r in report["results"] if r.get("browser") == engine]
    planned = report["plans"][engine]["rows"]
    assert 2 <= len(rows) < planned, (len(rows), planned)
    counts = Counter((r["runtime"], r["status"]) for r in rows)
    assert counts[("webgpu", "pass")] >= 1, counts
    by_runtime = "; ".join(
        f"{runtime} " + ", ".join(f"{n} {status}" for (rt, status), n in sorted(counts.items()) if rt == runtime)
        for runtime in dict.fromkeys(r["runtime"] for r in rows)
    )
    identity = report["browsers"][engine]
    line = next((line for line in printed.splitlines() if line.startswith(f"{engine} {identity['version']}: ")), None)
    print(f"\n{engine} interrupted after {len(rows)} of {planned} rows: {line}")
    assert line is not None, printed
    # What ran, of what was planned, by runtime; the adapter and threads the page had, not "none" and "no".
    assert line.startswith(
        f"{engine} {identity['version']}: {len(rows)} of {planned} page rows ran: {by_runtime} "
        "(WebGPU: a software adapter"
    ), line
    assert identity["webgpu"] is True and identity["adapter"]["fallback"] is True, identity
    assert f"threads: {identity['threads']['why']})" in line and identity["threads"]["most"] >= 2, line
    assert text.count(f"  [{engine}] ") == len(rows)  # every row streamed is in the report and counted
