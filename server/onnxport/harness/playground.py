"""The playground page's moves a program makes through Playwright: its timeouts, its elements, a drawn digit.

Shared by the browser tests (tests/fixtures/playground.py builds its waits and checks on them).
Playwright is a test dependency: nothing here imports it, the
callers hand in its Page and Locator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

# The page runs under a strict Content-Security-Policy without 'unsafe-eval', so no caller may use
# page.wait_for_function: every wait is a locator expectation, with these timeouts.
RUN_TIMEOUT_MS = 120_000  # one playground run: download, session creation, run, server reference
PAGE_TIMEOUT_MS = 30_000  # the probe, the manifest, a render


def by_testid(page: Page, name: str) -> Locator:
    return page.get_by_test_id(name)


def draw_digit(page: Page) -> int:
    """Draw a "7" on the digit canvas with the mouse; returns the ink on the canvas (how much darker than white)."""
    canvas = by_testid(page, "digit-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    if not box:  # not an assert: the script that uses this may run with -O
        raise AssertionError("the digit canvas has no bounding box")

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
        " let s = 0; for (let i = 0; i < d.length; i += 4) s += 255 - d[i]; return s; }"
    )
