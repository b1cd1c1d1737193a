"""Chromium and Firefox as browser_interface.Browser: one Playwright of their own each, every step under a time
limit."""

from __future__ import annotations

from typing import Any, Callable

from onnxport.harness.browser_interface import STEP_TIMEOUT_S, EngineError, first_line, timed_function


class PlaywrightPage:
    def __init__(self, engine: str, page) -> None:
        self.engine, self._page = engine, page

    def goto(self, url: str, *, timeout_s: float = STEP_TIMEOUT_S) -> None:
        try:
            self._page.goto(url, timeout=timeout_s * 1000)
        except Exception as exc:
            raise EngineError(f"{self.engine}: cannot open {url}: {first_line(exc)}") from exc

    def evaluate(self, function: str, arg: Any = None, *, timeout_s: float = STEP_TIMEOUT_S) -> Any:
        try:
            return self._page.evaluate(timed_function(function, timeout_s), arg)
        except Exception as exc:
            raise EngineError(f"{self.engine}: {first_line(exc).removeprefix('Page.evaluate: ')}") from exc

    def close(self) -> None:
        self._page.close()


class PlaywrightBrowser:
    """A Playwright browser launched by `launch(playwright)`; closing it stops its Playwright too."""

    def __init__(self, engine: str, launch: Callable[[Any], Any]) -> None:
        from playwright.sync_api import sync_playwright

        self.engine = engine
        self._playwright = sync_playwright().start()
        try:
            self._browser = launch(self._playwright)
        except BaseException:
            self._playwright.stop()
            raise
        self.version = self._browser.version

    def new_page(self) -> PlaywrightPage:
        return PlaywrightPage(self.engine, self._browser.new_page())

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._playwright.stop()
