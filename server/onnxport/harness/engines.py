"""The browser engines the check and the bench drive, behind one small interface.

Every engine gives a Browser (`engine`, `version`, `new_page()`, `close()`) whose Page has `goto(url)`,
`evaluate(function_source, arg, timeout_s=...)` and `close()`. Chromium and Firefox come through Playwright
(harness/chromium.py, harness/firefox.py), WebKitGTK through its WebDriver (harness/webkit.py). Every step has a
time limit; a step that fails or runs past it is an OnnxportError of one line naming the engine.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Protocol

from onnxport.errors import OnnxportError, UsageError

ENGINES = ("chromium", "firefox", "webkit")
# What a page step may take unless the caller says otherwise: a page load, a probe, a small evaluation.
STEP_TIMEOUT_S = 120.0
# A browser's start (Firefox takes 5 to 19 s here; a WebKit without a display would wait forever).
LAUNCH_TIMEOUT_S = 90.0


class EngineError(OnnxportError):
    """A browser step failed or ran out of time; the message is one line and names the engine."""


class Page(Protocol):
    def goto(self, url: str, *, timeout_s: float = STEP_TIMEOUT_S) -> None: ...

    def evaluate(self, function: str, arg: Any = None, *, timeout_s: float = STEP_TIMEOUT_S) -> Any: ...

    def close(self) -> None: ...


class Browser(Protocol):
    engine: str
    version: str

    def new_page(self) -> Page: ...

    def close(self) -> None: ...


def executable(engine: str) -> str | None:
    """The engine's executable on this machine, or None when it is not installed."""
    return _module(engine).default_executable()


def installed() -> list[str]:
    """The engines installed here, in ENGINES order."""
    return [engine for engine in ENGINES if executable(engine)]


def requested(text: str | None) -> list[str] | None:
    """`chromium,firefox` -> those engines, once each in their order; None or empty -> None (the installed
    ones). An unknown name is the command line's mistake, refused before anything about this machine."""
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    for name in names:
        if name not in ENGINES:
            raise UsageError(f"unknown browser {name!r}; browsers: {', '.join(ENGINES)}")
    return list(dict.fromkeys(names)) or None


def available(names: list[str] | None) -> list[str]:
    """The engines to drive: `names`, each installed, or with None the installed ones (at least one)."""
    if names is None:
        found = installed()
        if not found:
            raise OnnxportError("no browser installed: apt-get install -y chromium (or firefox-esr, or "
                                "webkit2gtk-driver xvfb)")
        return found
    for name in names:
        if not executable(name):
            raise OnnxportError(f"{name} is not installed: {_module(name).INSTALL}")
    return names


def parse(text: str | None) -> list[str]:
    """`chromium,firefox` -> engines; None or empty -> the installed ones. Unknown or uninstalled ones are refused."""
    return available(requested(text))


@contextlib.contextmanager
def open_browser(engine: str, *, webgpu: bool, executable_path: str | None = None) -> Iterator[Browser]:
    """Start `engine` (WebGPU switched on where the engine needs a switch when `webgpu`), closed afterwards."""
    browser = _module(engine).start(executable_path, webgpu=webgpu)
    try:
        yield browser
    finally:
        with contextlib.suppress(Exception):  # a browser that already died has nothing left to close
            browser.close()


def _module(engine: str):
    from onnxport.harness import chromium, firefox, webkit

    modules = {"chromium": chromium, "firefox": firefox, "webkit": webkit}
    if engine not in modules:
        raise UsageError(f"unknown browser {engine!r}; browsers: {', '.join(ENGINES)}")
    return modules[engine]


def timed_function(function: str, timeout_s: float) -> str:
    """`function` (an async function's source) raced against a timer in the page: a page whose work hangs
    answers with an error instead of holding the driver forever."""
    ms = int(timeout_s * 1000)
    return (f"async (arg) => {{ let timer; const limit = new Promise((_, reject) => {{ timer = setTimeout("
            f"() => reject(new Error('no answer within {timeout_s:g} s')), {ms}); }});"
            f" try {{ return await Promise.race([({function})(arg), limit]); }} finally {{ clearTimeout(timer); }} }}")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
