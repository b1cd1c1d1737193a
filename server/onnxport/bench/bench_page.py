"""One step of the browser bench in a page: web/app/bench.js's runBench, started in the page and watched from here.

The page says each stage as it starts (a start, a warm run), so a step that stops moving is told from a slow one.
Firefox ESR stopped moving mid-step in 4 of 11 benches here, 5 times, always on `wasm` (2 threads): before this
watch, a step of seconds sat still for 10 and 20 minutes until the bench was stopped; since, each was at a cached
start (once located further: reading the bytes, starting the runtime, creating the session) and passed when run
again on a fresh page (bench/browser.py). A loop of the same calls over 120 iris files never stopped.
"""

from __future__ import annotations

import time
from typing import Any

from onnxport.harness import browser_interface
from onnxport.json_boundary import JsonObject

# A stage with no news for this long is stuck: a stage is one start or one run, and minilm's slowest (a cold start
# on a software WebGPU adapter) takes about a minute here.
STALL_S = 300.0
# The whole step (one variant in one runtime, every form): progress that slow is past any use.
STEP_TIMEOUT_S = 1800.0
POLL_S = 1.0

START = """async ([models, variants, runtimes, encodedInputs, runs]) => {
    const { runBench } = await import('/web/app/bench.js');
    const state = window.onnxportBench = { stage: 'loading', seq: 0, done: false, error: null, result: null };
    runBench({ models, variants, runtimes, encodedInputs, runs,
               onProgress: (stage) => { state.stage = stage; state.seq += 1; } })
      .then((result) => { state.result = result; }, (error) => { state.error = String(error?.message ?? error); })
      .finally(() => { state.done = true; });
    return true;
}"""
READ = """async () => {
    const s = window.onnxportBench;
    return s ? { stage: s.stage, seq: s.seq, done: s.done, error: s.error, result: s.done ? s.result : null } : null;
}"""


class Stalled(browser_interface.EngineError):
    """The step stopped moving or ran past its time; the message says at which stage."""


def run_step(
    page: browser_interface.Page,
    engine: str,
    arg: list[Any],
    *,
    stall_s: float = STALL_S,
    timeout_s: float = STEP_TIMEOUT_S,
) -> JsonObject:
    """runBench(arg) in `page` until it answers; Stalled when no stage starts for stall_s or the step passes
    timeout_s, an EngineError when the page throws."""
    page.evaluate(START, arg, timeout_s=120)
    began = moved = time.monotonic()
    seen = -1
    while True:
        state = page.evaluate(READ, timeout_s=60)
        if state is None:
            raise browser_interface.EngineError(f"{engine}: the page lost the bench (it was reloaded)")
        if state["done"]:
            if state["error"]:
                raise browser_interface.EngineError(f"{engine}: {state['error']}")
            return state["result"]
        now = time.monotonic()
        if state["seq"] != seen:
            seen, moved = state["seq"], now
        if now - moved > stall_s:
            raise Stalled(f"{engine}: no progress for {stall_s:g} s at {state['stage']}")
        if now - began > timeout_s:
            raise Stalled(f"{engine}: past {timeout_s:g} s, at {state['stage']}")
        time.sleep(POLL_S)
