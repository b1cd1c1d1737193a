"""Drive WebKitGTK (Debian's webkit2gtk-driver: WebKitWebDriver and its MiniBrowser) over plain W3C WebDriver.

Playwright cannot drive the system WebKit, and the few WebDriver calls needed here fit a small client whose every
request has its own time limit. MiniBrowser has no headless mode: without a display a virtual one (Xvfb) is started,
and only then. Without a display the driver's new-session call would wait forever, so nothing here waits unbounded.
"""

from __future__ import annotations

import glob
import json
import os
import select
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

from onnxport.harness.browser_interface import (
    LAUNCH_TIMEOUT_S,
    STEP_TIMEOUT_S,
    EngineError,
    first_line,
    timed_function,
)
from onnxport.harness.process import free_port

INSTALL = "apt-get install -y webkit2gtk-driver xvfb"
MINIBROWSER_GLOBS = (
    "/usr/lib/*/webkit2gtk-4.1/MiniBrowser",
    "/usr/lib/*/webkitgtk-6.0/MiniBrowser",
    "/usr/libexec/webkit2gtk-4.1/MiniBrowser",
)
# SharedArrayBuffer (WebAssembly threads) is off in WebKitGTK's JavaScriptCore unless this is set.
ENVIRONMENT = {"JSC_useSharedArrayBuffer": "1"}
# WebGPU is a preview feature of WebKitGTK, off unless switched on (then navigator.gpu exists, null without an adapter).
WEBGPU_ARGS = ["--features=+WebGPU"]
# An evaluation's answer: {ok, value} or {ok: false, error}, so a page's exception is its message, not a driver error.
ASYNC_SCRIPT = """const done = arguments[arguments.length - 1];
Promise.resolve().then(() => (%s)(arguments[0])).then(
  (value) => done({ ok: true, value: value === undefined ? null : value }),
  (error) => done({ ok: false, error: String((error && error.message) || error) }));"""


def minibrowser() -> str | None:
    return next((path for pattern in MINIBROWSER_GLOBS for path in sorted(glob.glob(pattern))), None)


def default_executable() -> str | None:
    """WebKitWebDriver, when it, MiniBrowser and a display (DISPLAY, else Xvfb) are all here."""
    driver = shutil.which("WebKitWebDriver")
    has_display = bool(os.environ.get("DISPLAY")) or bool(shutil.which("Xvfb"))
    return driver if driver and minibrowser() and has_display else None


def start(executable: str | None, *, webgpu: bool) -> "WebKitBrowser":
    """WebKitGTK as a browser_interface.Browser; the caller closes it. `webgpu`: MiniBrowser's WebGPU feature (a
    preview, off by default) is switched on; without an adapter its navigator.gpu is null and the page's probe says
    so."""
    driver = executable or default_executable()
    browser_path = minibrowser()
    if not driver or not shutil.which(driver) or not browser_path:
        raise EngineError(f"webkit: not installed ({INSTALL})")
    return WebKitBrowser(driver, browser_path, webgpu=webgpu)


class WebKitBrowser:
    engine = "webkit"

    def __init__(self, driver: str, browser_path: str, *, webgpu: bool = False) -> None:
        self._display: subprocess.Popen | None = None
        self._driver: subprocess.Popen | None = None
        self.session: str | None = None
        try:
            environment = {**os.environ, **ENVIRONMENT}
            if not environment.get("DISPLAY"):
                self._display, number = _start_display()
                environment["DISPLAY"] = f":{number}"
            port = free_port()
            self._driver = subprocess.Popen(
                [driver, f"--port={port}"],
                env=environment,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self.base = f"http://127.0.0.1:{port}"
            self._wait_for_driver()
            args = ["--automation", *(WEBGPU_ARGS if webgpu else [])]
            answer = self.command(
                "POST",
                "/session",
                {"capabilities": {"alwaysMatch": {"webkitgtk:browserOptions": {"binary": browser_path, "args": args}}}},
                timeout_s=LAUNCH_TIMEOUT_S,
                what="start MiniBrowser",
            )
            self.session = answer["sessionId"]
            self.version = str(answer.get("capabilities", {}).get("browserVersion", "unknown"))
        except BaseException:
            self.close()
            raise

    def command(self, method: str, path: str, body: Any = None, *, timeout_s: float, what: str) -> Any:
        """One WebDriver request; its `value`, or an EngineError saying `what` failed and why."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return json.loads(response.read() or b"{}").get("value")
        except urllib.error.HTTPError as exc:
            value = _json(exc.read()).get("value") or {}
            raise EngineError(
                f"webkit: {what}: {value.get('error', exc.code)}: {first_line(Exception(value.get('message', '')))}"
            ) from exc
        except (OSError, ValueError) as exc:
            if "timed out" in str(exc):
                raise EngineError(f"webkit: {what}: no answer within {timeout_s:g} s") from exc
            raise EngineError(f"webkit: {what}: {first_line(exc)}") from exc

    def new_page(self) -> "WebKitPage":
        """MiniBrowser automates one window: a page is that window, left blank when closed."""
        return WebKitPage(self)

    def close(self) -> None:
        if self.session:
            session, self.session = self.session, None
            try:
                self.command("DELETE", f"/session/{session}", timeout_s=20, what="close MiniBrowser")
            except EngineError:
                pass  # the driver is stopped below either way
        for process in (self._driver, self._display):
            if process and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if process and process.stdout:
                process.stdout.close()  # Xvfb's display-number pipe
        self._driver = self._display = None

    def _wait_for_driver(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self._driver and self._driver.poll() is not None:
                raise EngineError(f"webkit: WebKitWebDriver exited with status {self._driver.returncode}")
            try:
                self.command("GET", "/status", timeout_s=2, what="status")
                return
            except EngineError:
                time.sleep(0.1)
        raise EngineError("webkit: WebKitWebDriver did not answer within 20 s")


class WebKitPage:
    engine = "webkit"

    def __init__(self, browser: WebKitBrowser) -> None:
        self._browser = browser

    def _session(self, path: str) -> str:
        if not self._browser.session:
            raise EngineError("webkit: the browser is closed")
        return f"/session/{self._browser.session}{path}"

    def goto(self, url: str, *, timeout_s: float = STEP_TIMEOUT_S) -> None:
        self._browser.command(
            "POST",
            self._session("/timeouts"),
            {"pageLoad": int(timeout_s * 1000)},
            timeout_s=20,
            what="set the page-load time limit",
        )
        self._browser.command("POST", self._session("/url"), {"url": url}, timeout_s=timeout_s + 10, what=f"open {url}")
        if url != "about:blank":
            # A load that failed (connection refused, unknown host) is answered as a success, with WebKit's own
            # error page at about:blank: say why, as the other engines do.
            shown = self.evaluate(
                "async () => location.href === 'about:blank' ? document.body?.innerText ?? '' : null", timeout_s=20
            )
            if shown is not None:
                reason = shown.strip().splitlines()[0] if shown.strip() else "the page did not load"
                raise EngineError(f"webkit: cannot open {url}: {reason}")

    def evaluate(self, function: str, arg: Any = None, *, timeout_s: float = STEP_TIMEOUT_S) -> Any:
        # The page's own timer answers first; the driver's and the socket's limits are the backstop.
        self._browser.command(
            "POST",
            self._session("/timeouts"),
            {"script": int((timeout_s + 10) * 1000)},
            timeout_s=20,
            what="set the script time limit",
        )
        answer = self._browser.command(
            "POST",
            self._session("/execute/async"),
            {"script": ASYNC_SCRIPT % timed_function(function, timeout_s), "args": [arg]},
            timeout_s=timeout_s + 20,
            what="evaluate",
        )
        if not isinstance(answer, dict) or not answer.get("ok"):
            error = answer.get("error") if isinstance(answer, dict) else answer
            raise EngineError(f"webkit: {first_line(Exception(str(error)))}")
        return answer.get("value")

    def close(self) -> None:
        if self._browser.session:
            self.goto("about:blank", timeout_s=20)


def _start_display() -> tuple[subprocess.Popen, str]:
    """Xvfb on the first free display; it writes the display's number once it accepts clients."""
    if not shutil.which("Xvfb"):
        raise EngineError(f"webkit: no DISPLAY and no Xvfb to make one ({INSTALL})")
    display = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert display.stdout is not None
    ready, _, _ = select.select([display.stdout], [], [], 20)
    number = display.stdout.readline().decode().strip() if ready else ""
    if not number:
        display.kill()
        display.wait()
        display.stdout.close()
        raise EngineError("webkit: Xvfb did not start a display within 20 s")
    return display, number


def _json(data: bytes) -> dict:
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
