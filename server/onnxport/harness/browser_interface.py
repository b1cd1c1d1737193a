"""The interface every browser driver gives (chromium.py, firefox.py, webkit.py), and what they share.

A Browser (`engine`, `version`, `new_page()`, `close()`) whose Page has `goto(url)`,
`evaluate(function_source, arg, timeout_s=...)` and `close()`. Every step has a time limit; a step that fails or
runs past it is an EngineError of one line naming the engine. The drivers import this module and never the
registry of engines (browser_engines.py), which imports them.
"""

from __future__ import annotations

from typing import Any, Protocol

from onnxport.errors import OnnxportError

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


def timed_function(function: str, timeout_s: float) -> str:
    """`function` (an async function's source) raced against a timer in the page: a page whose work hangs
    answers with an error instead of holding the driver forever."""
    ms = int(timeout_s * 1000)
    return (
        f"async (arg) => {{ let timer; const limit = new Promise((_, reject) => {{ timer = setTimeout("
        f"() => reject(new Error('no answer within {timeout_s:g} s')), {ms}); }});"
        f" try {{ return await Promise.race([({function})(arg), limit]); }} finally {{ clearTimeout(timer); }} }}"
    )


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
