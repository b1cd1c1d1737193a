"""A browser engine in a thread of its own, so that the bench can keep every engine open at once.

Playwright's sync API takes one Playwright per thread: with Chromium open, starting Firefox in the same thread is
refused ("using Playwright Sync API inside the asyncio loop"). The bench runs each step in every engine in turn
(bench/browser.py), so each engine lives in its own thread and every call to it is made there, one at a time.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from onnxport.harness import browser_engines, browser_interface

T = TypeVar("T")


class EngineThread:
    """`engine` opened (browser_engines.open_browser) in a thread of its own, with one page (`page`); close() closes
    both."""

    def __init__(self, engine: str, *, webgpu: bool, executable_path: str | None = None) -> None:
        self.engine = engine
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"bench-{engine}")
        self._stack = contextlib.ExitStack()
        try:
            browser = self.call(
                lambda: self._stack.enter_context(
                    browser_engines.open_browser(engine, webgpu=webgpu, executable_path=executable_path)
                )
            )
            self.version: str = browser.version
            self.page = ThreadPage(self, self.call(browser.new_page))
        except BaseException:
            self.close()
            raise

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """function(*args, **kwargs) in the engine's thread; its result, or its exception raised here."""
        return self._pool.submit(function, *args, **kwargs).result()

    def close(self) -> None:
        try:
            self.call(self._stack.close)
        finally:
            self._pool.shutdown(wait=True)


class ThreadPage:
    """An browser_interface.Page whose every call runs in its engine's thread."""

    def __init__(self, owner: EngineThread, page: browser_interface.Page) -> None:
        self._owner, self._page = owner, page

    def goto(self, url: str, *, timeout_s: float = browser_interface.STEP_TIMEOUT_S) -> None:
        self._owner.call(self._page.goto, url, timeout_s=timeout_s)

    def evaluate(self, function: str, arg: Any = None, *, timeout_s: float = browser_interface.STEP_TIMEOUT_S) -> Any:
        return self._owner.call(self._page.evaluate, function, arg, timeout_s=timeout_s)

    def close(self) -> None:
        self._owner.call(self._page.close)
