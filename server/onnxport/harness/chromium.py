"""Drive the system Chromium through Playwright: its executable, its flags, the conformance page and debug runs."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import urlencode

from onnxport.errors import OnnxportError

# Quiet, offline-friendly Chromium: no sandbox (containers), no background traffic.
BASE_FLAGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# A real WebGPU adapter without a GPU: SwiftShader through Vulkan (no shader-f16; about 500 times slower than native).
WEBGPU_FLAGS = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
                "--use-webgpu-adapter=swiftshader"]


def default_browser() -> str | None:
    """The Chromium on PATH (chromium, chromium-browser or google-chrome), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def executable_path(executable: str | None) -> str:
    """`executable`, or the default browser; an OnnxportError naming it when there is no such file."""
    path = executable or default_browser()
    if not path or not Path(path).exists():
        raise OnnxportError(
            f"no Chromium at {path or 'chromium (not on PATH)'}; "
            "install it (apt-get install -y chromium) or pass --browser PATH"
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
        return playwright.chromium.launch(executable_path=path, args=flags(webgpu=webgpu, extra=extra_flags))
    except Exception as exc:
        raise OnnxportError(f"cannot start Chromium at {path}: {str(exc).splitlines()[0]}") from exc


@contextlib.contextmanager
def chromium(executable: str | None, *, webgpu: bool) -> Iterator[Any]:
    """launch() inside its own Playwright; the browser is closed afterwards."""
    from playwright.sync_api import sync_playwright

    executable_path(executable)  # a missing browser fails before Playwright starts
    with sync_playwright() as playwright:
        browser = launch(playwright, executable, webgpu=webgpu)
        try:
            yield browser
        finally:
            browser.close()


def run_conformance_page(browser, base_url: str, models: list[str] | None, runtimes: list[str],
                         webgpu_rows: int, timeout_s: float) -> dict:
    """Open /conformance?autorun=1 and return the report the page builds."""
    from playwright.sync_api import expect

    query = {"autorun": "1", "runtimes": ",".join(runtimes), "webgpu_rows": str(webgpu_rows)}
    if models:
        query["models"] = ",".join(models)
    page = browser.new_page()
    page.goto(f"{base_url}/conformance?{urlencode(query)}")
    status = page.locator("[data-testid=conformance-status][data-done=true]")
    expect(status).to_have_count(1, timeout=timeout_s * 1000)
    error = status.get_attribute("data-error")
    if error:
        raise OnnxportError(f"the conformance page failed: {error}")
    report = page.evaluate("() => window.onnxportReport")
    page.close()
    return report


def run_debug_model(browser, base_url: str, url: str, runtime: str, feeds: dict) -> dict:
    """Run a debug model (every intermediate value an output) in the page's worker for `runtime`."""
    page = browser.new_page()
    page.goto(f"{base_url}/")
    result = page.evaluate(
        """async ([url, runtime, feeds]) => {
            const { runDebugModel } = await import('/web/app/conformance.js');
            return runDebugModel(url, runtime, feeds);
        }""",
        [url, runtime, feeds],
    )
    page.close()
    return result
