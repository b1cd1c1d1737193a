"""The browser engines the check and the bench drive: which there are, which are installed, and each one started.

A registry over the drivers: Chromium and Firefox come through Playwright (chromium.py, firefox.py), WebKitGTK
through its WebDriver (webkit.py). Each gives the one interface of browser_interface.py, which the drivers import
instead of this module, so no driver imports the registry back.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from onnxport.errors import OnnxportError, UsageError
from onnxport.harness import chromium, firefox, webkit
from onnxport.harness.browser_interface import Browser

ENGINES = ("chromium", "firefox", "webkit")
DRIVERS = {"chromium": chromium, "firefox": firefox, "webkit": webkit}  # each a module: start(), INSTALL...


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
            raise OnnxportError(
                "no browser installed: apt-get install -y chromium (or firefox-esr, or webkit2gtk-driver xvfb)"
            )
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
    if engine not in DRIVERS:
        raise UsageError(f"unknown browser {engine!r}; browsers: {', '.join(ENGINES)}")
    return DRIVERS[engine]
