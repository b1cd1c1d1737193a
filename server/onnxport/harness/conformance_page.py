"""The conformance page (web/app/pages/conformance.js) and debug runs, in any engine of browser_engines.py.

The page runs every row itself; this side reads its rows as they finish, so a check that is stopped or runs out
of time still has every row finished so far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlencode

from onnxport.accuracy import reasons
from onnxport.errors import OnnxportError
from onnxport.harness.browser_interface import Page
from onnxport.json_boundary import JsonObject

POLL_S = 1.0
READ_PROGRESS = """async (seen) => {
  const p = window.onnxportProgress;
  if (!p) return null;
  return { total: p.total, browser: p.browser, plan: p.plan, done: p.done, error: p.error,
           results: p.results.slice(seen) };
}"""


@dataclass
class PageRun:
    """What the page gave: its rows, its browser's identity, its plan (each row's model, variant, form and runtime
    in run order; what became of the WebGPU rows), and `stopped` (why it did not finish) or None."""

    results: list[JsonObject] = field(default_factory=list)
    browser: JsonObject = field(default_factory=dict)
    plan: JsonObject = field(default_factory=dict)
    total: int | None = None
    stopped: str | None = None
    report: JsonObject = field(default_factory=dict)


def run_conformance_page(
    page: Page,
    base_url: str,
    models: list[str] | None,
    runtimes: list[str],
    *,
    webgpu_rows: int,
    row_timeout_s: float,
    deadline: float,
    full_webgpu: bool = False,
    on_start: Callable[[PageRun], None] = lambda run: None,
    on_row: Callable[[JsonObject], None] = lambda row: None,
) -> PageRun:
    """Open /conformance?autorun=1 and read its rows until it is done or time.monotonic() passes `deadline`.
    `full_webgpu`: every WebGPU row on a software adapter too (the page runs one per model by default)."""
    query = {
        "autorun": "1",
        "runtimes": ",".join(runtimes),
        "webgpu_rows": str(webgpu_rows),
        "row_timeout_s": f"{row_timeout_s:g}",
    }
    if full_webgpu:
        query["full_webgpu"] = "1"
    if models:
        query["models"] = ",".join(models)
    run = PageRun()
    page.goto(f"{base_url}/conformance?{urlencode(query)}")
    while True:
        state = page.evaluate(READ_PROGRESS, len(run.results), timeout_s=60)
        if state and _read(state, run, on_start, on_row):
            run.report = page.evaluate("async () => window.onnxportReport", timeout_s=60) or {}
            return run
        if time.monotonic() >= deadline:
            run.stopped = "time limit"
            return run
        try:
            time.sleep(POLL_S)
        except KeyboardInterrupt:
            _read_last(page, run, on_start, on_row)
            raise


def _read(
    state: JsonObject, run: PageRun, on_start: Callable[[PageRun], None], on_row: Callable[[JsonObject], None]
) -> bool:
    """Take the page's new rows into `run`; True when the page is done."""
    if run.total is None and state.get("total") is not None:
        run.total, run.browser, run.plan = state["total"], state.get("browser") or {}, state.get("plan") or {}
        on_start(run)
    for row in state["results"]:
        row = python_words(row)
        run.results.append(row)
        on_row(row)
    if state.get("error"):
        raise OnnxportError(f"the conformance page failed: {state['error']}")
    return bool(state.get("done"))


def python_words(row: JsonObject) -> JsonObject:
    """A page's row with its judgement's reason and diagnostic in Python's words (accuracy/reasons.py render): the
    page shows its own words, the report, the CLI and the verdicts file print these. The page sends the reason as
    data (`reason_data`) beside its text; a row without it (skipped, error) keeps its text."""
    if row.get("reason_data"):
        row = {**row, "reason": reasons.render(row["reason_data"])}
    diagnostic = row.get("diagnostic")
    if diagnostic and diagnostic.get("code") == "elementwise_diagnostic":
        row = {**row, "diagnostic": {**diagnostic, "text": reasons.render(diagnostic)}}
    return row


def _read_last(
    page: Page, run: PageRun, on_start: Callable[[PageRun], None], on_row: Callable[[JsonObject], None]
) -> None:
    """Interrupted between two reads: the rows the page finished since the last one ran, so they are kept and
    counted; a page that no longer answers (the browser took the Ctrl-C too) leaves the rows read so far."""
    try:
        state = page.evaluate(READ_PROGRESS, len(run.results), timeout_s=5)
        if state:
            _read(state, run, on_start, on_row)
    except Exception:  # the interruption goes on either way
        pass


def run_debug_model(page: Page, base_url: str, url: str, runtime: str, feeds: dict, timeout_s: float) -> dict:
    """Run a debug model (every intermediate value an output) in the page's worker for `runtime`."""
    page.goto(f"{base_url}/")
    return page.evaluate(
        """async ([url, runtime, feeds]) => {
            const { runDebugModel } = await import('/web/app/conformance.js');
            return runDebugModel(url, runtime, feeds);
        }""",
        [url, runtime, feeds],
        timeout_s=timeout_s,
    )
