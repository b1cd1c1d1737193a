"""The conformance page (web/app/pages/conformance.js) and debug runs, in any engine of engines.py.

The page runs every row itself; this side reads its rows as they finish, so a check that is stopped or runs out
of time still has every row finished so far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlencode

from onnxport.errors import OnnxportError
from onnxport.harness.engines import Page

POLL_S = 1.0
READ_PROGRESS = """async (seen) => {
  const p = window.onnxportProgress;
  if (!p) return null;
  return { total: p.total, browser: p.browser, done: p.done, error: p.error, results: p.results.slice(seen) };
}"""


@dataclass
class PageRun:
    """What the page gave: its rows, its browser's identity, and `stopped` (why it did not finish) or None."""
    results: list[dict[str, Any]] = field(default_factory=list)
    browser: dict[str, Any] = field(default_factory=dict)
    total: int | None = None
    stopped: str | None = None
    report: dict[str, Any] = field(default_factory=dict)


def run_conformance_page(page: Page, base_url: str, models: list[str] | None, runtimes: list[str], *,
                         webgpu_rows: int, row_timeout_s: float, deadline: float,
                         on_start: Callable[[int, dict], None] = lambda total, browser: None,
                         on_row: Callable[[dict[str, Any]], None] = lambda row: None) -> PageRun:
    """Open /conformance?autorun=1 and read its rows until it is done or time.monotonic() passes `deadline`."""
    query = {"autorun": "1", "runtimes": ",".join(runtimes), "webgpu_rows": str(webgpu_rows),
             "row_timeout_s": f"{row_timeout_s:g}"}
    if models:
        query["models"] = ",".join(models)
    run = PageRun()
    page.goto(f"{base_url}/conformance?{urlencode(query)}")
    while True:
        state = page.evaluate(READ_PROGRESS, len(run.results), timeout_s=60)
        if state:
            if run.total is None and state.get("total") is not None:
                run.total, run.browser = state["total"], state.get("browser") or {}
                on_start(run.total, run.browser)
            for row in state["results"]:
                run.results.append(row)
                on_row(row)
            if state.get("error"):
                raise OnnxportError(f"the conformance page failed: {state['error']}")
            if state.get("done"):
                run.report = page.evaluate("async () => window.onnxportReport", timeout_s=60) or {}
                return run
        if time.monotonic() >= deadline:
            run.stopped = "time limit"
            return run
        time.sleep(POLL_S)


def run_debug_model(page: Page, base_url: str, url: str, runtime: str, feeds: dict, timeout_s: float) -> dict:
    """Run a debug model (every intermediate value an output) in the page's worker for `runtime`."""
    page.goto(f"{base_url}/")
    return page.evaluate(
        """async ([url, runtime, feeds]) => {
            const { runDebugModel } = await import('/web/app/conformance.js');
            return runDebugModel(url, runtime, feeds);
        }""",
        [url, runtime, feeds], timeout_s=timeout_s)
