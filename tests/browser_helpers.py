"""Helpers for the browser tests (test_browser*.py): Chromium's flags and the playground's moves.

The page runs under a strict Content-Security-Policy without 'unsafe-eval', so nothing here
uses page.wait_for_function: every wait is a locator expectation.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import BrowserContext, Locator, Page, expect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Quiet, offline-friendly Chromium: no sandbox (containers), no background traffic.
BROWSER_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# A real WebGPU adapter in software: SwiftShader through Vulkan (no shader-f16; slow).
WEBGPU_ARGS = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
               "--use-webgpu-adapter=swiftshader"]

RUN_TIMEOUT_MS = 120_000  # one playground run: download, session creation, run, server reference
PAGE_TIMEOUT_MS = 30_000  # the probe, the manifest, a render
FINISHED = re.compile(r"^(Ran|Failed)")
ARTIFACTS = "/repository/artifacts/"
MAX_ABS = re.compile(r"max \|browser − server\| = (\S+)")


@dataclass
class Tab:
    """One fresh browser context (its own Cache Storage) with one page, and what it saw."""

    context: BrowserContext
    page: Page
    base_url: str
    console_errors: list[str] = field(default_factory=list)  # console.error and uncaught exceptions
    requests: list[str] = field(default_factory=list)  # every URL the context asked for (workers too)

    def goto(self, route: str = "#/") -> Page:
        """Open the app at a hash route, e.g. "#/play/digits?runtime=wasm"."""
        self.page.goto(f"{self.base_url}/{route}")
        return self.page

    def artifact_requests(self) -> list[str]:
        """Model files asked for (not the small reference files verification reads)."""
        return [url for url in self.requests if ARTIFACTS in url and url.endswith(".onnx")]

    def reference_requests(self) -> list[str]:
        return [url for url in self.requests if ARTIFACTS in url and url.endswith(".json")]


def by_testid(page: Page, name: str) -> Locator:
    return page.get_by_test_id(name)


def wait_for_probe(page: Page) -> Locator:
    probe = by_testid(page, "probe")
    expect(probe).to_have_attribute("data-ready", "true", timeout=PAGE_TIMEOUT_MS)
    return probe


def run(page: Page) -> Locator:
    """Click Run and wait until the path says how it ended; returns the path element."""
    button = by_testid(page, "run")
    expect(button).to_be_enabled(timeout=PAGE_TIMEOUT_MS)
    button.click()
    path = by_testid(page, "path")
    expect(path).to_have_text(FINISHED, timeout=RUN_TIMEOUT_MS)
    return path


def expect_ran_on(page: Page, runtime: str, variant: str | None = None) -> Locator:
    """Run; the run must end on `runtime` (and `variant`), both in the text and the attributes."""
    path = run(page)
    assert path.inner_text().startswith(f"Ran on {runtime} "), (
        f"expected a run on {runtime}, the page says {path.inner_text()!r}; "
        f"notes: {by_testid(page, 'notes').inner_text()!r}; results: {by_testid(page, 'results').inner_text()!r}"
    )
    expect(path).to_have_attribute("data-runtime", runtime)
    if variant is not None:
        expect(path).to_have_attribute("data-variant", variant)
    expect(by_testid(page, "browser-result")).to_be_visible()
    expect(by_testid(page, "server-result")).to_be_visible()
    return path


def result_values(page: Page) -> tuple[str, str]:
    """(browser data-value, server data-value) of the last run."""
    return (by_testid(page, "browser-result").get_attribute("data-value"),
            by_testid(page, "server-result").get_attribute("data-value"))


def max_abs_diffs(page: Page) -> dict[str, float]:
    """{output name: max |browser - server|} from the difference section."""
    text = by_testid(page, "difference").inner_text()
    diffs = {}
    for line in text.splitlines():
        match = MAX_ABS.search(line)
        if match:
            diffs[line.split(":", 1)[0].strip()] = float(match.group(1))
    assert diffs, f"no 'max |browser − server|' line in the difference section: {text!r}"
    return diffs


def draw_digit(page: Page) -> int:
    """Draw a "7" on the digit canvas with the mouse; returns the ink on the canvas (sum of red)."""
    canvas = by_testid(page, "digit-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box, "the digit canvas has no bounding box"

    def at(fx: float, fy: float) -> tuple[float, float]:
        return box["x"] + box["width"] * fx, box["y"] + box["height"] * fy

    page.mouse.move(*at(0.25, 0.2))
    page.mouse.down()
    page.mouse.move(*at(0.75, 0.2), steps=10)
    page.mouse.move(*at(0.45, 0.85), steps=10)
    page.mouse.up()
    return canvas_ink(canvas)


def canvas_ink(canvas: Locator) -> int:
    return canvas.evaluate(
        "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        " let s = 0; for (let i = 0; i < d.length; i += 4) s += d[i]; return s; }"
    )


def plan_steps(page: Page) -> list[tuple[str, str]]:
    """[(runtime, text)] of the plan's ordered steps."""
    steps = by_testid(page, "plan").locator("ol > li")
    expect(steps.first).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    return [(li.get_attribute("data-runtime"), li.inner_text()) for li in steps.all()]


def plan_variant(page: Page, runtime: str) -> str:
    """The variant the plan gives `runtime` ("wasm · int8-static · 2 threads: ..." -> int8-static)."""
    for step_runtime, text in plan_steps(page):
        if step_runtime == runtime:
            return text.split("·")[1].split(":")[0].strip()
    raise AssertionError(f"no {runtime} step in the plan: {plan_steps(page)}")


def flip_middle_bytes(path: Path, count: int = 64) -> None:
    """Invert `count` bytes in the middle of a file (same size, different sha256)."""
    data = bytearray(path.read_bytes())
    start = len(data) // 2 - count // 2
    for i in range(start, start + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
