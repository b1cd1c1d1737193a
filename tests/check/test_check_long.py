"""A long `onnxport check` degrades, it does not crash: a row past --row-timeout is a `timeout` row and the rest go
on; a check past --timeout, or stopped by SIGTERM or SIGINT, writes its finished rows marked incomplete and exits 3
with one line, and stops the server and the browser it started."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from fixtures.check import running_check
from onnxport.harness import browser_engines

pytestmark = pytest.mark.slow

ONNXPORT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "onnxport"


@pytest.fixture(autouse=True)
def _chromium():
    if "chromium" not in browser_engines.installed():
        pytest.skip("chromium is not installed here (`make browsers` installs it)")


def assert_incomplete_line(err: str, *fragments: str) -> None:
    """stderr: row lines, then exactly one `onnxport:` line, the incomplete one; no traceback."""
    assert "Traceback" not in err, err
    ours = [line for line in err.splitlines() if line.startswith("onnxport:")]
    assert len(ours) == 1 and ours[0].startswith("onnxport: check incomplete: "), err
    for fragment in fragments:
        assert fragment in ours[0], f"{fragment!r} not in {ours[0]!r}"


def test_rows_past_their_time_limit_are_timeout_rows_and_the_rest_go_on(check_cli, repository_copy, tmp_path):
    repository = repository_copy(["iris"])
    report_path = tmp_path / "report.json"
    started = time.monotonic()
    code, out, err = check_cli(
        "--repository",
        repository,
        "check",
        "iris",
        "--browsers",
        "chromium",
        "--runtimes",
        "wasm",
        "--row-timeout",
        "0.001",
        "--json",
        report_path,
    )
    print(f"\n--row-timeout 0.001: exit {code} after {time.monotonic() - started:.1f} s")
    assert code == 1, f"exit {code}\n{out}\n{err}"
    assert "Traceback" not in err and "onnxport: error" not in err, err
    report = json.loads(report_path.read_text())
    assert report["incomplete"] is None
    rows = [r for r in report["results"] if r.get("browser") == "chromium"]
    # Every row of the page came, each one past its limit: none held up the ones after it.
    assert len(rows) == 6 and {r["status"] for r in rows} == {"timeout"}, rows
    assert all(r["reason"] == "no result within the row's time limit of 0.001 s" for r in rows), rows
    assert err.count("[chromium] iris ") == 6 and "wasm: timeout: no result within the row's time limit" in err
    assert "6 timeout" in out


def test_a_check_past_its_time_writes_its_finished_rows_and_exits_3(check_cli, repository_copy, tmp_path):
    repository = repository_copy(["iris"])
    report_path = tmp_path / "report.json"
    started = time.monotonic()
    code, out, err = check_cli(
        "--repository",
        repository,
        "check",
        "iris",
        "--browsers",
        "chromium",
        "--runtimes",
        "wasm",
        "--timeout",
        "1",
        "--json",
        report_path,
    )
    print(f"\n--timeout 1: exit {code} after {time.monotonic() - started:.1f} s; {err.splitlines()[-1]}")
    assert code == 3, f"exit {code}\n{out}\n{err}"
    # The limit falls before Chromium starts or inside its page, as the server's start took: either says so.
    report = json.loads(report_path.read_text())
    assert re.fullmatch(
        r"the check's time limit \(1 s, --timeout\) ran out (before|in) chromium", report["incomplete"]
    ), report["incomplete"]
    assert_incomplete_line(err, report["incomplete"], f"{len(report['results'])} finished rows are in {report_path}")
    assert report["results"][0]["runtime"] == "source" and {r["status"] for r in report["results"]} == {"pass"}
    assert "Incomplete:" in report_path.with_suffix(".html").read_text()


def test_a_check_stopped_mid_page_by_its_time_keeps_the_rows_it_has(check_cli, repository_copy, tmp_path):
    # digits: 24 rows on wasm and wasm-1t (14 to 26 s here) and its one row on SwiftShader's WebGPU: 10 s ends the
    # check inside Chromium's page even on an idle machine.
    repository = repository_copy(["digits"])
    report_path = tmp_path / "report.json"
    started = time.monotonic()
    code, out, err = check_cli(
        "--repository",
        repository,
        "check",
        "--browsers",
        "chromium",
        "--runtimes",
        "wasm,wasm-1t,webgpu",
        "--timeout",
        "10",
        "--json",
        report_path,
    )
    report = json.loads(report_path.read_text())
    rows = [r for r in report["results"] if r.get("browser") == "chromium"]
    planned = (report["plans"].get("chromium") or {}).get("rows") or 1  # none: stopped before the page planned
    print(
        f"\n--timeout 10: exit {code} after {time.monotonic() - started:.1f} s, {len(rows)} of {planned} chromium rows"
    )
    assert code == 3, f"exit {code}\n{out}\n{err}"
    assert_incomplete_line(err, "the check's time limit (10 s, --timeout) ran out in chromium")
    assert report["incomplete"] == "the check's time limit (10 s, --timeout) ran out in chromium"
    # SwiftShader has no shader-f16: fp16's WebGPU rows are skipped up front, the rest of what ran passed.
    unfinished = [
        (r["variant"], r["runtime"], r["status"], r.get("reason"))
        for r in rows
        if r["status"] != "pass"
        and not (r["status"] == "skipped" and r["runtime"] == "webgpu" and "shader-f16" in r["reason"])
    ]
    assert len(rows) < planned and not unfinished, unfinished
    assert err.count("  [chromium] ") == len(rows)  # every row streamed is in the report, and only those
    assert not [r for r in rows if r["runtime"] in ("preprocessing", "answers")]  # the page did not finish


# --------------------------------------------------------------------------- stopped by a signal


def process_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, start time, command line) of every process."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            table[int(stat.parent.name)] = (int(fields[1]), fields[19], command)
    return table


def descendants(root: int) -> dict[int, tuple[str, str]]:
    """pid -> (start time, command line) of every process under `root`."""
    table, found, todo = process_table(), {}, [root]
    while todo:
        parent = todo.pop()
        for pid, (ppid, start, command) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = (start, command)
                todo.append(pid)
    return found


def still_running(processes: dict[int, tuple[str, str]], repository: Path) -> list[str]:
    """Those of `processes` still running (same pid, same start), and any process naming `repository`."""
    table = process_table()
    left = [
        f"{pid} {command[:120]}"
        for pid, (start, command) in processes.items()
        if pid in table and table[pid][1] == start
    ]
    left += [
        f"{pid} {command[:120]}"
        for pid, (_, _, command) in table.items()
        if str(repository) in command and pid not in processes
    ]
    return left


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_check_stopped_by_a_signal_keeps_its_rows_and_leaves_no_process(repository_copy, tmp_path, stop):
    repository = repository_copy(["digits"]).resolve()  # digits: 24 chromium rows, about 1 s each
    report_path = tmp_path / "report.json"
    children: dict[int, tuple[str, str]] = {}
    try:
        with running_check(
            [
                str(ONNXPORT),
                "--repository",
                str(repository),
                "check",
                "--browsers",
                "chromium",
                "--runtimes",
                "wasm,wasm-1t",
                "--json",
                str(report_path),
            ]
        ) as check:
            check.until(lambda line: "  [chromium] " in line, "first chromium row")
            children = descendants(check.process.pid)
            assert any(f"serve --repository {repository}" in c for _, c in children.values()), children
            assert any("chromium" in c for _, c in children.values()), children
            signalled = time.monotonic()
            code = check.stop(stop)
            stopped_in = time.monotonic() - signalled
        waited = time.monotonic()
        left = still_running(children, repository)
        while left and time.monotonic() - waited < 10:
            time.sleep(0.2)
            left = still_running(children, repository)
        text = "".join(check.err)
        print(
            f"\n{stop.name} after {text.count('  [chromium] ')} chromium rows: exit {code} in {stopped_in:.1f} s, "
            f"{len(children)} processes under the check, {len(left)} left after "
            f"{time.monotonic() - waited:.1f} s more"
        )
        assert code == 3, f"exit {code}\n{text}"
        assert_incomplete_line(text, "check incomplete: interrupted", f"finished rows are in {report_path}")
        assert not left, f"still running after the check exited: {left}"
        report = json.loads(report_path.read_text())
        assert report["incomplete"] == "interrupted"
        rows = [r for r in report["results"] if r.get("browser") == "chromium"]
        assert 1 <= len(rows) < 24 and all(r["status"] == "pass" for r in rows), rows
        assert text.count("  [chromium] ") == len(rows)  # every row streamed is in the report
        assert [r["runtime"] for r in report["results"] if r.get("browser") != "chromium"] == ["source"]
    finally:
        for pid, (start, _) in children.items():  # what the check left, stopped here, not by a later test
            with contextlib.suppress(ProcessLookupError):
                if process_table().get(pid, (0, ""))[1] == start:
                    os.kill(pid, signal.SIGKILL)
