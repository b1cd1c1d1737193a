"""Drive the system Chromium through Playwright: its executable and its flags (browser_interface.py: the common
interface)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable

from onnxport.errors import OnnxportError
from onnxport.harness.browser_interface import LAUNCH_TIMEOUT_S, EngineError, first_line

# Quiet, offline-friendly Chromium: no sandbox (containers), no background traffic.
BASE_FLAGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# A real WebGPU adapter without a GPU: SwiftShader through Vulkan (no shader-f16; about 500 times slower than native).
WEBGPU_FLAGS = [
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--use-vulkan=swiftshader",
    "--use-webgpu-adapter=swiftshader",
]


INSTALL = "apt-get install -y chromium"


def default_browser() -> str | None:
    """The Chromium on PATH (chromium, chromium-browser or google-chrome), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


default_executable = default_browser


def executable_path(executable: str | None) -> str:
    """`executable`, or the default browser; an OnnxportError naming it when there is no such file."""
    path = executable or default_browser()
    if not path or not Path(path).exists():
        raise OnnxportError(
            f"no Chromium at {path or 'chromium (not on PATH)'}; install it ({INSTALL}) or pass --browser PATH"
        )
    return path


def flags(*, webgpu: bool, extra: Iterable[str] = ()) -> list[str]:
    """The command-line flags of every launch: BASE_FLAGS, WEBGPU_FLAGS if webgpu, then `extra`."""
    return [*BASE_FLAGS, *(WEBGPU_FLAGS if webgpu else []), *extra]


def launch(playwright, executable: str | None = None, *, webgpu: bool, extra_flags: Iterable[str] = ()):
    """A Playwright Browser: Chromium at `executable` (default: default_browser()) with flags();
    the caller closes it."""
    path = executable_path(executable)
    try:
        return playwright.chromium.launch(
            executable_path=path, args=flags(webgpu=webgpu, extra=extra_flags), timeout=LAUNCH_TIMEOUT_S * 1000
        )
    except Exception as exc:
        raise EngineError(f"chromium: cannot start {path}: {first_line(exc)}") from exc


def start(executable: str | None, *, webgpu: bool):
    """Chromium as a browser_interface.Browser (a Playwright of its own); the caller closes it."""
    from onnxport.harness.playwright_pages import PlaywrightBrowser

    executable_path(executable)  # a missing browser fails before Playwright starts
    return PlaywrightBrowser("chromium", lambda playwright: launch(playwright, executable, webgpu=webgpu))
