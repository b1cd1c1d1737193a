"""Drive the system Firefox (Debian's firefox-esr) through Playwright over WebDriver BiDi."""

from __future__ import annotations

import shutil

from onnxport.harness.browser_interface import LAUNCH_TIMEOUT_S, EngineError, first_line

INSTALL = "apt-get install -y firefox-esr"
# WebGPU is off by default in Firefox ESR; on a machine without a GPU it finds Mesa's lavapipe, a software adapter.
WEBGPU_PREFS = {"dom.webgpu.enabled": True, "gfx.webgpu.ignore-blocklist": True}
# Offline and quiet: no update checks, no telemetry, no remote settings fetched at start.
QUIET_PREFS = {
    "app.update.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.enabled": False,
    "browser.shell.checkDefaultBrowser": False,
}


def default_executable() -> str | None:
    return shutil.which("firefox-esr") or shutil.which("firefox")


def start(executable: str | None, *, webgpu: bool):
    """Firefox as a browser_interface.Browser; the caller closes it."""
    from onnxport.harness.playwright_pages import PlaywrightBrowser

    path = executable or default_executable()
    if not path or not shutil.which(path):
        raise EngineError(f"firefox: not installed ({INSTALL})")

    def launch(playwright):
        try:
            # channel "moz-firefox": the system's Firefox over BiDi, not Playwright's patched build.
            return playwright.firefox.launch(
                channel="moz-firefox",
                executable_path=path,
                timeout=LAUNCH_TIMEOUT_S * 1000,
                firefox_user_prefs={**QUIET_PREFS, **(WEBGPU_PREFS if webgpu else {})},
            )
        except Exception as exc:
            raise EngineError(f"firefox: cannot start {path}: {first_line(exc)}") from exc

    return PlaywrightBrowser("firefox", launch)
