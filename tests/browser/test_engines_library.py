"""The browser library in the other engines (issue 31), driven as harness/browser_engines.py drives them, on a real
`onnxport serve` of the demo models: WebKit's null navigator.gpu is a reason in model.choice, not an error; its
hardwareConcurrency (4 on a 2-core machine) is a ceiling the library measures before it runs more than one
thread; an isolated WebKit page without SharedArrayBuffer runs one thread and says why; Firefox's software
WebGPU (lavapipe) is ranked last, and its failure on minilm fp16 falls back and is remembered; each engine's
fleet report lands under its own device class. Each engine is skipped, with its reason, where it is not installed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from onnxport.harness import browser_engines
from onnxport.harness.process import free_port

pytestmark = pytest.mark.browser

# A load, its thread trial and a second load of minilm int8-dynamic: 3 + 8 + 1 s in WebKit on 2 busy cores.
STEP_TIMEOUT_S = 90


class Driven:
    """One engine and one page of the server, every step on a thread of its own: Playwright's sync API cannot
    start inside the suite's session Playwright (tests/fixtures/browser.py) on the main thread."""

    def __init__(self, engine: str, base_url: str, *, webgpu: bool) -> None:
        self.engine = engine
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"library-{engine}")
        self._stack = contextlib.ExitStack()
        started = time.monotonic()
        try:
            self.browser, self.page = self._run(self._open, base_url, webgpu)
        except BaseException:
            self.close()
            raise
        print(f"\n{engine} {self.browser.version} started in {time.monotonic() - started:.1f} s")

    def _open(self, base_url: str, webgpu: bool):
        browser = self._stack.enter_context(browser_engines.open_browser(self.engine, webgpu=webgpu))
        page = browser.new_page()
        page.goto(f"{base_url}/")  # the app's page: cross-origin isolated, the library at /web/lib/
        return browser, page

    def _run(self, step, *args):
        return self._thread.submit(step, *args).result(STEP_TIMEOUT_S + 60)

    def evaluate(self, function: str, arg=None):
        return self._run(lambda: self.page.evaluate(function, arg, timeout_s=STEP_TIMEOUT_S))

    def close(self) -> None:
        try:
            self._thread.submit(self._stack.close).result(60)
        finally:
            self._thread.shutdown()


@contextlib.contextmanager
def driven(engine: str, base_url: str, *, webgpu: bool):
    if engine not in browser_engines.installed():
        pytest.skip(f"{engine} is not installed here ({importlib.import_module(f'onnxport.harness.{engine}').INSTALL})")
    opened = Driven(engine, base_url, webgpu=webgpu)
    try:
        yield opened
    finally:
        opened.close()


# Load minilm twice on a fresh page's memory; between them, wait for the first load's thread trial.
LOAD_TWICE = """async () => {
  localStorage.clear();
  const { connect, probe } = await import('/web/lib/index.js');
  const { threadCeiling } = await import('/web/lib/choice/probe.js');
  const device = await probe();
  const client = connect('/');
  const seen = (m) => ({ runtime: m.choice.runtime, key: m.choice.key, threads: m.choice.threads, why: m.choice.why,
                         verification: m.choice.verification.status, attempts: m.choice.attempts });
  let started = performance.now();
  const first = await client.load('minilm', { variant: 'int8-dynamic' });
  const atLoad = { ...seen(first), ms: performance.now() - started, trialPending: first.threadTrial !== null };
  const trial = await first.threadTrial;
  const afterTrial = { ...seen(first), ms: performance.now() - started };
  await first.dispose();
  started = performance.now();
  const second = await client.load('minilm', { variant: 'int8-dynamic' });
  const again = { ...seen(second), ms: performance.now() - started, trialPending: second.threadTrial !== null };
  await second.dispose();
  const trials = Object.values(JSON.parse(localStorage.getItem('onnxport-threads-v2') ?? '{}'));
  return { device, ceiling: threadCeiling(device), atLoad, trial, afterTrial, again, trials };
}"""


def test_webkit_says_why_there_is_no_webgpu_and_runs_no_more_threads_than_measured_to_help(live_server):
    with driven("webkit", live_server, webgpu=True) as webkit:  # WebGPU switched on: navigator.gpu is null
        got = webkit.evaluate(LOAD_TWICE)
    device, ceiling = got["device"], got["ceiling"]
    at_load, after, again = got["atLoad"], got["afterTrial"], got["again"]
    [trial] = got["trials"]
    measured = trial["files"][next(iter(trial["files"]))]
    print(
        f"\nwebkit: hardwareConcurrency {device['hardwareConcurrency']} on {os.cpu_count()} cores; ceiling "
        f"{ceiling['threads']}; minilm int8-dynamic median of {measured['pairs']} paired runs: {measured['many']} "
        f"threads {measured['many_ms']:.1f} ms, 1 thread {measured['one_ms']:.1f} ms -> {after['threads']} "
        f"thread(s); "
        f"load {at_load['ms']:.0f} ms, trial done {after['ms']:.0f} ms after it began, second load "
        f"{again['ms']:.0f} ms\n  why: {after['why']}"
    )
    # No WebGPU, said in words, and no error on the way.
    assert (device["webgpu"], device["webgpuReason"]) == (False, "this browser has no WebGPU (navigator.gpu is null)")
    assert device["webnnReason"] == "this browser has no WebNN (navigator.ml is missing)"
    for choice in (at_load, after, again):
        assert choice["why"].endswith(
            "; not webgpu: this browser has no WebGPU (navigator.gpu is null); "
            "not webnn: this browser has no WebNN (navigator.ml is missing)"
        ), choice["why"]
        assert (choice["runtime"], choice["attempts"]) == ("wasm", []), choice
    # WebKit's hardwareConcurrency overstates the cores: the load runs one thread, its trial measures the ceiling.
    assert device["sharedMemory"] is True and ceiling["threads"] > 1, (device, ceiling)
    assert (at_load["key"], at_load["threads"], at_load["trialPending"]) == ("wasm-1t", 1, True), at_load
    assert at_load["verification"] == "passed"
    assert measured["many"] == ceiling["threads"] and measured["one_ms"] > 0 and measured["many_ms"] > 0, measured
    # After the trial, and from the next load on, the count the measurement supports: more only when clearly 10%
    # faster in paired runs (an undecided trial keeps the one thread the load started on).
    supported = measured["threads"]
    assert supported == (ceiling["threads"] if measured["decided"] and measured["ratio"] < 0.9 else 1), measured
    assert after["threads"] == supported == got["trial"]["threads"], (after, measured)
    assert after["key"] == ("wasm" if supported > 1 else "wasm-1t")
    assert (again["threads"], again["trialPending"], again["verification"]) == (supported, False, "remembered"), again
    assert f"{measured['many']} threads took " in again["why"] and "(this file's trial, " in again["why"], again["why"]


def test_webkit_without_shared_array_buffer_runs_one_thread_and_says_why(live_server, monkeypatch):
    from onnxport.harness import webkit as webkit_driver

    monkeypatch.setattr(webkit_driver, "ENVIRONMENT", {})  # JavaScriptCore's SharedArrayBuffer left off
    monkeypatch.delenv("JSC_useSharedArrayBuffer", raising=False)
    with driven("webkit", live_server, webgpu=False) as webkit:
        got = webkit.evaluate("""async () => {
          const { connect, probe } = await import('/web/lib/index.js');
          const device = await probe();
          const model = await connect('/').load('iris', { variant: 'fp32' });
          const { runtime, key, threads, why } = model.choice;
          await model.dispose();
          return { isolated: crossOriginIsolated, sharedMemory: device.sharedMemory, webgpuReason: device.webgpuReason,
                   runtime, key, threads, why, trial: model.threadTrial };
        }""")
    print(f"\nwebkit without SharedArrayBuffer: {got}")
    assert (got["isolated"], got["sharedMemory"]) == (True, False), got
    assert got["webgpuReason"] == "this browser has no WebGPU (navigator.gpu is missing)"
    assert (got["runtime"], got["key"], got["threads"], got["trial"]) == ("wasm", "wasm-1t", 1, None), got
    assert "one thread: this browser gives the page no SharedArrayBuffer, which threads need" in got["why"], got["why"]


FIREFOX_WEBGPU = """async () => {
  localStorage.clear();
  const { connect, probe, deviceKind } = await import('/web/lib/index.js');
  const device = await probe();
  const client = connect('/');
  const auto = (await client.plan('minilm')).steps.map((s) => ({ runtime: s.runtime, variant: s.variant, why: s.why }));
  // As on a device whose GPU this browser measured fast: WebGPU fp16 ranks first.
  const fp16 = (await client.model('minilm')).variants.fp16.sha256;
  localStorage.setItem('onnxport-speeds-v2', JSON.stringify({ [`${fp16}|webgpu`]: { warm_ms: 0.1, runs: 1 } }));
  const firstPlan = (await client.plan('minilm', { variant: 'fp16' })).steps.map((s) => s.runtime);
  const seen = (m) => ({ runtime: m.choice.runtime, variant: m.choice.variant, attempts: m.choice.attempts,
                         skipped: m.choice.plan.skipped.filter((s) => s.runtime === 'webgpu') });
  const first = await client.load('minilm', { variant: 'fp16' });
  const fellBack = seen(first);
  await first.threadTrial;
  await first.dispose();
  const second = await client.load('minilm', { variant: 'fp16' });
  const after = seen(second);
  await second.threadTrial;
  await second.dispose();
  return { device, kind: deviceKind(device), auto, firstPlan, fellBack, after };
}"""


def test_firefox_software_webgpu_is_ranked_last_and_its_fp16_failure_falls_back_and_is_remembered(live_server):
    with driven("firefox", live_server, webgpu=True) as firefox:
        got = firefox.evaluate(FIREFOX_WEBGPU)
    device, fell_back, after = got["device"], got["fellBack"], got["after"]
    print(
        f"\nfirefox: adapter {device['adapter']}, shader-f16 {device['shaderF16']}, kind {got['kind']!r}; "
        f"minilm fp16 attempts: {fell_back['attempts']}"
    )
    if not device["webgpu"]:
        pytest.skip(f"Firefox found no WebGPU adapter here: {device['webgpuReason']}")
    # Lavapipe: isFallbackAdapter with an empty adapter info; a software adapter, named as such, ranked last.
    assert device["adapter"]["fallback"] is True, device["adapter"]
    assert got["kind"].endswith(" (software)") and " ·  " not in got["kind"], got["kind"]
    runtimes = [s["runtime"] for s in got["auto"]]
    assert runtimes.index("webgpu") > max(i for i, r in enumerate(runtimes) if r == "wasm"), runtimes
    assert all("software WebGPU adapter" in s["why"] for s in got["auto"] if s["runtime"] == "webgpu")
    # Measured fast, WebGPU fp16 is tried first; Firefox fails it, and the load goes on to WebAssembly.
    assert got["firstPlan"][0] == "webgpu", got["firstPlan"]
    if fell_back["runtime"] == "webgpu":
        pytest.fail(
            "Firefox's WebGPU ran minilm fp16 here: the lavapipe failure this test stands on is gone "
            f"(adapter {device['adapter']})"
        )
    [attempt] = fell_back["attempts"]
    assert (attempt["runtime"], attempt["variant"], attempt["wrong"]) == ("webgpu", "fp16", False), attempt
    assert attempt["error"].startswith("webgpu failed its first run on this device: "), attempt
    assert "\n" not in attempt["error"] and "ONNXRuntimeError" not in attempt["error"], attempt
    assert (fell_back["runtime"], fell_back["variant"]) == ("wasm", "fp16"), fell_back
    # Remembered: the next load skips the pair, with the engine's reason, without trying it again.
    assert (after["runtime"], after["attempts"]) == ("wasm", []), after
    [skipped] = after["skipped"]
    assert skipped["variant"] == "fp16" and skipped["reason"].startswith(attempt["error"]), skipped
    assert skipped["reason"].endswith("; not tried again)"), skipped


# A load of digits with fleet reports on; what the page's class is, and how the report fared.
REPORT_LOAD = """async () => {
  const { connect, deviceClass, probe } = await import('/web/lib/index.js');
  const client = connect('/', { report: true });
  const model = await client.load('digits', { variant: 'int8-dynamic' });
  const status = await client.lastReport;
  const result = { status, device: deviceClass(await probe()), key: model.choice.key,
                   verification: model.choice.verification.status };
  await model.dispose();
  return result;
}"""


@pytest.mark.parametrize(("engine", "engine_name"), [("firefox", "Firefox"), ("webkit", "WebKitGTK")])
def test_each_engine_reports_under_its_own_device_class(engine, engine_name, spawn_server, demo_repository, tmp_path):
    """Fleet reports (docs/reference/fleet.md) from Firefox's lavapipe (an adapter with empty info) and WebKitGTK (no
    WebGPU, no version): the server files each under the class the library named, one passing client."""
    port = free_port()
    base_url = spawn_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)],
        port,
        env={"ONNXPORT_FLEET_DB": str(tmp_path / "fleet.sqlite3"), "ONNXPORT_FLEET_MIN_CLIENTS": "1"},
    )
    with driven(engine, base_url, webgpu=True) as page:
        got = page.evaluate(REPORT_LOAD)
    assert (got["status"], got["verification"]) == (202, "passed"), got
    assert got["device"]["engine"] == engine_name, got["device"]
    with urllib.request.urlopen(f"{base_url}/api/fleet", timeout=30) as answer:
        groups = json.load(answer)["groups"]
    [group] = [g for g in groups if g["runtime"] == got["key"]]
    assert (group["class"], group["clients"], group["verdict"]) == (got["device"], 1, "pass"), group
    print(f"{engine}: reported as {group['class_key']!r}")
