"""harness/browser_engines.py and browser_interface.py: each installed engine behind the one interface (values,
page errors, time limits), WebKit's own virtual display, browser_engines.parse's refusals, and the probe in WebKit
(a null navigator.gpu)."""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from onnxport.errors import OnnxportError
from onnxport.harness import browser_engines
from onnxport.harness.browser_interface import EngineError
from onnxport.harness.process import free_port

# Every kind of value a page hands back: numbers (integer, fraction, tiny), text with quotes and a newline,
# nested lists and objects, null and booleans.
VALUES = {
    "numbers": [1, 2.5, -3e-7, 2**40],
    "text": 'héllo "q"\nsecond line',
    "nested": {"a": [{"b": None}, [[]]]},
    "none": None,
    "flags": [True, False],
}


def require(engine: str) -> None:
    if engine not in browser_engines.installed():
        pytest.skip(f"{engine} is not installed here ({importlib.import_module(f'onnxport.harness.{engine}').INSTALL})")


class Driven:
    """One engine and one blank page, every step on a thread of its own: Playwright's sync API cannot start
    inside the suite's session Playwright (tests/fixtures/browser.py) on the main thread."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"engine-{engine}")
        self._stack = contextlib.ExitStack()
        self.browser, self.page = self.run(self._open)

    def _open(self):
        browser = self._stack.enter_context(browser_engines.open_browser(self.engine, webgpu=False))
        page = browser.new_page()
        page.goto("about:blank")
        return browser, page

    def run(self, step, *args, timeout_s: float = 180):
        return self._thread.submit(step, *args).result(timeout_s)

    def evaluate(self, function: str, arg=None, **options):
        return self.run(lambda: self.page.evaluate(function, arg, **options))

    def close(self) -> None:
        try:
            self.run(self._stack.close)
        finally:
            self._thread.shutdown()


@pytest.fixture(scope="module", params=browser_engines.ENGINES)
def driven(request):
    require(request.param)
    started = time.monotonic()
    opened = Driven(request.param)
    print(f"\n{request.param} {opened.browser.version} started in {time.monotonic() - started:.1f} s")
    yield opened
    opened.close()


# --------------------------------------------------------------------------- each engine, one interface


@pytest.mark.browser
def test_values_go_to_the_page_and_come_back_unchanged(driven):
    assert driven.browser.engine == driven.engine and driven.browser.version
    assert driven.evaluate("async (arg) => arg", VALUES) == VALUES
    assert driven.evaluate("async (arg) => arg.numbers[0] + arg.numbers[1]", VALUES) == 3.5
    assert driven.evaluate("async () => undefined") is None
    assert driven.evaluate("async () => [1, 'a', null, {b: [2]}]") == [1, "a", None, {"b": [2]}]


@pytest.mark.browser
@pytest.mark.parametrize(
    "throw", ["new Error('boom: the first line\\nthe second line')", "'boom: the first line'"], ids=["error", "string"]
)
def test_a_page_exception_is_one_engine_error_line_with_its_message(driven, throw):
    with pytest.raises(EngineError) as caught:
        driven.evaluate(f"async () => {{ throw {throw}; }}")
    message = str(caught.value)
    print(f"\n{message}")
    assert "\n" not in message and message.startswith(f"{driven.engine}: "), message
    assert "boom: the first line" in message and "second line" not in message
    assert isinstance(caught.value, OnnxportError)
    assert driven.evaluate("async () => 6 * 7") == 42  # the page is still usable


@pytest.mark.browser
def test_a_promise_that_never_resolves_is_an_error_after_its_time_limit(driven):
    started = time.monotonic()
    with pytest.raises(EngineError) as caught:
        driven.evaluate("async () => new Promise(() => {})", timeout_s=2)
    elapsed = time.monotonic() - started
    print(f"\n{driven.engine}: {caught.value} after {elapsed:.2f} s (limit 2 s)")
    assert str(caught.value).startswith(f"{driven.engine}: ") and "no answer within 2 s" in str(caught.value)
    assert 1.5 <= elapsed < 20, f"{driven.engine} answered after {elapsed:.1f} s, not about 2 s"
    assert driven.evaluate("async () => 'still here'") == "still here"


@pytest.mark.browser
def test_a_page_that_cannot_be_opened_is_one_engine_error_line(driven):
    url = f"http://127.0.0.1:{free_port()}/nothing-listens-here"
    page = driven.run(driven.browser.new_page)  # Chromium's error page would race the next test's navigation
    try:
        with pytest.raises(EngineError) as caught:
            driven.run(lambda: page.goto(url, timeout_s=20))
    finally:
        driven.run(page.close)
    message = str(caught.value)
    print(f"\n{message}")
    assert "\n" not in message and message.startswith(f"{driven.engine}: cannot open {url}: "), message


# --------------------------------------------------------------------------- WebKit's display


def children(name: str) -> set[int]:
    """This process's children called `name` (as /proc/PID/stat gives it)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            text = stat.read_text()
            comm, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
            if comm == name and int(rest[1]) == os.getpid():
                found.add(int(stat.parent.name))
    return found


def with_environment(entry: str) -> list[str]:
    """The processes (PID and name) whose environment holds `entry`, e.g. DISPLAY=:3."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError):
            if entry.encode() in environ.read_bytes().split(b"\0"):
                found.append(f"{environ.parent.name} {(environ.parent / 'comm').read_text().strip()}")
    return found


def display_of(pid: int) -> str:
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return next(e.decode().split("=", 1)[1] for e in entries if e.startswith(b"DISPLAY="))


def wait_until(condition, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)
    return condition()


@pytest.mark.browser
def test_webkit_without_a_display_starts_its_own_xvfb_and_stops_it_on_close(monkeypatch):
    require("webkit")
    monkeypatch.delenv("DISPLAY", raising=False)
    xvfb_before, drivers_before = children("Xvfb"), children("WebKitWebDriver")
    started = time.monotonic()
    with browser_engines.open_browser("webkit", webgpu=False) as browser:
        print(f"\nwebkit {browser.version} with its own display in {time.monotonic() - started:.1f} s")
        (xvfb,) = children("Xvfb") - xvfb_before
        (driver,) = children("WebKitWebDriver") - drivers_before
        display = display_of(driver)
        page = browser.new_page()
        page.goto("about:blank")
        assert page.evaluate("async () => navigator.userAgent").count("AppleWebKit") == 1
        on_display = with_environment(f"DISPLAY={display}")
        print(f"on {display} (Xvfb {xvfb}): {', '.join(on_display)}")
        assert any(p.endswith("MiniBrowser") for p in on_display), on_display
        assert Path(f"/tmp/.X11-unix/X{display[1:]}").exists()
    assert wait_until(lambda: not Path(f"/proc/{xvfb}").exists()), f"Xvfb {xvfb} still runs after close"
    assert wait_until(lambda: not with_environment(f"DISPLAY={display}")), (
        f"left on {display} after close: {with_environment(f'DISPLAY={display}')}"
    )
    assert not Path(f"/tmp/.X11-unix/X{display[1:]}").exists()


@pytest.mark.browser
def test_webkit_with_a_display_starts_no_xvfb_of_its_own(monkeypatch):
    require("webkit")
    own = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", "800x600x24", "-nolisten", "tcp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert own.stdout is not None and select.select([own.stdout], [], [], 20)[0], "Xvfb did not start"
        display = f":{own.stdout.readline().decode().strip()}"
        monkeypatch.setenv("DISPLAY", display)
        xvfb_before = children("Xvfb")
        with browser_engines.open_browser("webkit", webgpu=False) as browser:
            assert children("Xvfb") == xvfb_before, "webkit started an Xvfb although DISPLAY was set"
            assert browser.new_page().evaluate("async () => 1 + 1") == 2
            assert any(p.endswith("MiniBrowser") for p in with_environment(f"DISPLAY={display}"))
    finally:
        own.terminate()
        own.wait(10)
        own.stdout.close()


# --------------------------------------------------------------------------- browser_engines.parse


def test_an_unknown_engine_is_refused_naming_it_and_the_known_ones():
    for text in ("safari", "chromium,edge"):
        with pytest.raises(OnnxportError) as caught:
            browser_engines.parse(text)
        bad = text.split(",")[-1]
        assert str(caught.value) == f"unknown browser {bad!r}; browsers: chromium, firefox, webkit"


def test_an_engine_that_is_not_installed_is_refused_with_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it: no engine is installed
    assert browser_engines.installed() == []
    for engine, package in (("chromium", "chromium"), ("firefox", "firefox-esr"), ("webkit", "webkit2gtk-driver")):
        with pytest.raises(OnnxportError) as caught:
            browser_engines.parse(f"{engine}")
        assert str(caught.value).startswith(f"{engine} is not installed: apt-get install -y ") and package in str(
            caught.value
        ), caught.value
    with pytest.raises(OnnxportError, match="^no browser installed: apt-get install -y chromium"):
        browser_engines.parse(None)


def test_no_list_is_the_installed_engines_and_a_list_keeps_its_order_once_each():
    installed = browser_engines.installed()
    if not installed:
        pytest.skip("no engine installed here (`make browsers`)")
    assert browser_engines.parse(None) == browser_engines.parse("") == installed
    if len(installed) < 2:
        pytest.skip(f"one engine installed here ({installed}): nothing to order")
    first, second = installed[:2]
    assert browser_engines.parse(f" {second} ,{first},{second},") == [second, first]


# --------------------------------------------------------------------------- the probe in WebKit


@pytest.mark.browser
@pytest.mark.parametrize("webgpu, gpu", [(True, "null"), (False, "missing")])
def test_webkits_null_navigator_gpu_is_a_reason_in_the_probe_not_an_error(live_server, webgpu, gpu):
    """With WebGPU switched on (a check with webgpu rows) WebKitGTK has a navigator.gpu that is null; without,
    none. Either is a reason, not a requestAdapter TypeError."""
    require("webkit")
    with browser_engines.open_browser("webkit", webgpu=webgpu) as browser:
        page = browser.new_page()
        page.goto(f"{live_server}/")
        device = page.evaluate("""async () => {
            const { probe } = await import('/web/lib/index.js');
            const device = await probe();
            return { ...device, gpuIn: 'gpu' in navigator, gpuIsNull: navigator.gpu === null };
        }""")
    print(
        f"\nwebkit {browser.version}: webgpuReason {device['webgpuReason']!r}, isolated "
        f"{device['crossOriginIsolated']}, SharedArrayBuffer {device['sharedMemory']}, "
        f"hardwareConcurrency {device['hardwareConcurrency']}"
    )
    assert (device["gpuIn"], device["gpuIsNull"]) == (webgpu, webgpu), f"navigator.gpu is not {gpu} in this WebKit"
    assert device["webgpu"] is False and device["adapter"] is None
    assert device["webgpuReason"] == f"this browser has no WebGPU (navigator.gpu is {gpu})"
    # The page is cross-origin isolated, and the driver switches JavaScriptCore's SharedArrayBuffer on.
    assert device["crossOriginIsolated"] is True and device["sharedMemory"] is True
