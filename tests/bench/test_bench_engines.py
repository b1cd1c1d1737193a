"""`onnxport bench --browsers`: the browser rows in Chromium and the other installed engines, side by side in one
report.

iris on WebAssembly with threads only, 2 runs, in Chromium and WebKit: most of the time is each engine's cold,
cached and prepared starts of 6 files (one test, not one per engine: the bench's native and server parts and
Chromium's rows would run again for each).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from onnxport import tensor_json
from onnxport.bench import bench_page, bench_report
from onnxport.bench.engine_threads import EngineThread
from onnxport.harness import browser_engines

PROJECT = Path(__file__).resolve().parents[2]
# What each engine's user agent says about it (WebKit's says Safari, and Chromium's says Safari and AppleWebKit too).
IRIS_ROW = np.array([[5.1, 3.5, 1.4, 0.2]], np.float32)
USER_AGENT = {"chromium": "HeadlessChrome/", "firefox": "Firefox/", "webkit": "AppleWebKit/605"}


def onnxport(*args: object, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "onnxport", *map(str, args)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def side_by_side(printed: str) -> dict[tuple[str, str, str], list[str]]:
    """The text report's engines table: (variant, form, runtime) -> its cells."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("browser engines side by side"))
    rows = {}
    for line in lines[start + 3 :]:  # title, headers, rule
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) < 4:
            break
        rows[tuple(cells[:3])] = cells[3:]
    return rows


@pytest.mark.slow
def test_bench_measures_each_engine_beside_chromium(repository_copy, tmp_path):
    if not browser_engines.executable("chromium"):
        pytest.skip("chromium is not installed here (make browsers installs it)")
    # One engine beside Chromium keeps make test's time (each engine costs its cold, cached and prepared starts of
    # every file): WebKit, the one whose threads and timings differ most; Firefox when WebKit is not installed.
    # `onnxport check` runs all three (tests/check/test_check_engines.py).
    others = [engine for engine in ("webkit", "firefox") if browser_engines.executable(engine)][:1]
    if not others:
        pytest.skip("neither firefox nor webkit is installed here (make browsers installs them)")
    repository = repository_copy(models=["iris"])
    run = onnxport(
        "--repository",
        repository,
        "bench",
        "iris",
        "--runs",
        "2",
        "--runtimes",
        "wasm",
        "--browsers",
        ",".join(["chromium", *others]),
        "--json",
        tmp_path / "bench.json",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "bench.json").read_text())

    assert list(report["browsers"]) == ["chromium", *others]
    assert report["browser"] == report["browsers"]["chromium"]  # where the performance page reads
    chromium = report["browsers"]["chromium"]
    # Every file Chromium ran (each variant as built, and its forms), the other engines ran too.
    files = {(r["variant"], r["form"]) for r in chromium["results"] if r["status"] == "ok"}
    assert {(v, None) for v in report["models"]["iris"]["variants"]} <= files
    for name, section in report["browsers"].items():
        assert section["engine"] == name and section["version"] and "error" not in section, section.get("error")
        assert USER_AGENT[name] in section["device"]["userAgent"], section["device"]["userAgent"]
        assert section["threads"] >= 1
        ok = [r for r in section["results"] if r["status"] == "ok"]
        assert {(r["variant"], r["form"]) for r in ok} == files, f"{name}: {section['results']}"
        for r in ok:
            assert r["browser"] == name and r["runtime"] == "wasm" and r["warm"]["median_ms"] > 0
            assert r["cached"]["source"] == "cache", f"{name}: the second start must read the Cache API"
    assert "speed" not in chromium
    for engine in others:
        speed = report["browsers"][engine]["speed"]
        assert speed["against"] == "chromium"
        for figures in speed["runtimes"].values():  # iris runs under the 5 ms floor: usually none
            assert figures["rows"] >= 1 and figures["median_ratio"] > 0
        assert f"{engine} warm time against chromium" in run.stdout

    # The printed table sets each engine's warm run beside Chromium's, and their ratio, row by row.
    printed = side_by_side(run.stdout)
    warm = {
        name: {(r["variant"], r["form"] or "as built"): r["warm"]["median_ms"] for r in section["results"]}
        for name, section in report["browsers"].items()
    }
    assert len(printed) == len(files)
    for (variant, form, runtime), cells in printed.items():
        base = warm["chromium"][(variant, form)]
        expected = [f"{base:.3f}"]
        for engine in others:
            mine = warm[engine][(variant, form)]
            expected += [f"{mine:.3f}", f"{mine / base:.2f}x"]
        assert cells == expected, (variant, form, cells)
    for engine in report["browsers"]:
        print(f"iris wasm warm ms in {engine}:", {f"{v}/{f}": round(ms, 3) for (v, f), ms in warm[engine].items()})


def test_bench_refuses_an_unknown_engine_before_it_starts(tmp_path):
    run = onnxport("--repository", tmp_path, "bench", "--browsers", "chromium,safari", timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "onnxport: error: unknown browser 'safari'; browsers: chromium, firefox, webkit"
    ]


@pytest.mark.slow
def test_a_bench_step_past_its_time_is_stopped_and_a_fresh_page_runs_it(live_server):
    """In a thread of its own: the session's Playwright (tests/fixtures/browser.py) holds this one."""
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(error=_step_past_its_time(live_server)), daemon=True)
    worker.start()
    worker.join(600)
    assert not worker.is_alive() and box.get("error") is None, box.get("error")


def _step_past_its_time(live_server):
    try:
        _run_step_past_its_time(live_server)
    except BaseException as exc:  # handed to the test's thread
        return exc
    return None


def _run_step_past_its_time(live_server):
    """bench_page.run_step watches the page's stages: past its limit it stops with the stage it was at (a step
    that hangs costs its limit, not the bench), and the page opened again runs the same step. Chromium, iris fp32
    on wasm: about 10 s."""
    arg = [["iris"], ["fp32"], ["wasm"], {"iris": tensor_json.encode({"features": IRIS_ROW})}, 3]
    with browser_engines.open_browser("chromium", webgpu=False) as browser:
        page = browser.new_page()
        page.goto(f"{live_server}/")
        began = time.monotonic()
        with pytest.raises(bench_page.Stalled) as stopped:
            bench_page.run_step(page, "chromium", arg, timeout_s=0.5)  # 3 files x 3 starts: seconds
        took = time.monotonic() - began
        print(f"stopped after {took:.1f} s: {stopped.value}")
        # The stage it was at when stopped: any of the page's (a loaded machine can be anywhere by then).
        assert re.fullmatch(r"chromium: past 0\.5 s, at \S.*", str(stopped.value)), str(stopped.value)
        assert took < 60  # the step's limit plus the watch's poll, not the step's own seconds; bounded generously
        page.goto(f"{live_server}/")
        result = bench_page.run_step(page, "chromium", arg)
    assert [(r["variant"], r["status"]) for r in result["results"]][0] == ("fp32", "ok")
    assert {r["status"] for r in result["results"]} == {"ok"} and result["device"]["userAgent"]


def test_the_text_report_names_each_engine_its_adapter_and_its_stalls():
    """engine_lines on a report's sections: an old report (only `browser`) reads as Chromium's."""
    firefox = {
        "engine": "firefox",
        "version": "153.8.0",
        "threads": 2,
        "results": [],
        "device": {
            "userAgent": "Mozilla/5.0 Firefox/153.0",
            "hardwareConcurrency": 2,
            "crossOriginIsolated": True,
            "shaderF16": True,
            "adapter": {"vendor": "", "architecture": "", "device": "", "fallback": True},
        },
        "stalls": [
            "minilm fp16 wasm: firefox: no progress for 300 s at minilm fp16/as built wasm: cached "
            "start, bytes, runtime and session; run again"
        ],
    }
    webkit = {
        "engine": "webkit",
        "version": None,
        "threads": None,
        "results": [],
        "device": None,
        "error": "webkit: start MiniBrowser: no answer within 90 s",
    }
    lines = bench_report.engine_lines({"browsers": {"firefox": firefox, "webkit": webkit}})
    assert lines == [
        "browser firefox 153.8.0: 2 threads on wasm (hardwareConcurrency 2, isolated yes); "
        "WebGPU: software adapter, shader-f16",
        "  Mozilla/5.0 Firefox/153.0",
        f"  stalled: {firefox['stalls'][0]}",
        "browser webkit ?: - threads on wasm (hardwareConcurrency -, isolated no); WebGPU: none (not probed); "
        "stopped: webkit: start MiniBrowser: no answer within 90 s",
    ]
    old = bench_report.engine_lines({"browser": {**firefox, "engine": "chromium", "stalls": []}})
    assert old[0].startswith("browser chromium 153.8.0: 2 threads")


@pytest.mark.slow
def test_chromium_and_firefox_are_open_at_once_each_in_its_thread():
    """The bench keeps every engine open and runs each step in each in turn; Playwright refuses a second Playwright
    in one thread ("using Playwright Sync API inside the asyncio loop"), so each engine has its own. About 15 s."""
    for needed in ("chromium", "firefox"):
        if not browser_engines.executable(needed):
            pytest.skip(f"{needed} is not installed here (make browsers installs it)")
    with contextlib.ExitStack() as stack:
        opened = [
            stack.enter_context(contextlib.closing(EngineThread(engine, webgpu=False)))
            for engine in ("chromium", "firefox")
        ]
        for _ in range(2):  # in turn, twice: each page answers while the other engine is open
            agents = [engine.page.evaluate("async (n) => [n + 1, navigator.userAgent]", 41) for engine in opened]
            assert [a[0] for a in agents] == [42, 42]
            assert "HeadlessChrome/" in agents[0][1] and "Firefox/" in agents[1][1]
