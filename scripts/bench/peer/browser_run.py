"""Drives the bench page (scripts/bench/peer/web/) in this machine's Chromium: cold starts, warm rounds, embeddings.

Every measurement is taken inside the page (performance.now() around the call), so Playwright's own round
trips are not in it. Sides alternate: cold starts A/B then B/A round by round, each in a new browser context
(empty HTTP cache, Cache API and localStorage); warm rounds on one page, the order reversed every round.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from onnxport.harness import chromium

# After a context closes, its workers and their threads take a moment to go: a cold start begun at once shares the
# 2 cores with them. A page a user opens starts on a quiet browser, so each cold start waits this long first.
COLD_GAP_S = 1.0
STEP_MS = 600_000  # one evaluate: a cold start of fp32 on 2 cores is seconds; a warm round tens of seconds
# The page's hardwareConcurrency, when --threads asks onnxport for a count that is not its ceiling
# (min(4, hardwareConcurrency), probe.js): its WebAssembly worker then starts that many threads.
CORES_SCRIPT = "Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => %d });"


@dataclass(frozen=True)
class Side:
    side: str  # "peer" or "onnxport"
    dtype: str  # the peer's dtype (fp32, q8, q4) or onnxport's variant name; "default": the library's own
    threads: int | None = None  # pinned, or None: the library's own (the peer's runtime default, onnxport's load())

    @property
    def name(self) -> str:
        return f"{self.side}/{self.dtype}/{self.threads or 'own'}"

    def page_arg(self) -> dict:
        return {"name": self.name, "side": self.side, "dtype": self.dtype, "threads": self.threads}


@dataclass
class Results:
    cold: dict[str, list[dict]] = field(default_factory=dict)  # side name -> one answer per round
    cold_load: dict[str, list[dict]] = field(default_factory=dict)  # onnxport variant -> load()'s answers
    warm: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # side name -> batch -> ms
    threads: dict[str, list[int]] = field(default_factory=dict)  # side name -> the threads it ran each warm round
    infos: dict[str, dict] = field(default_factory=dict)
    embeddings: dict[str, list[list[float]]] = field(default_factory=dict)
    page: dict = field(default_factory=dict)


class BenchPage:
    """The page at `url` in Chromium (headless, WebAssembly only); `cores` overrides hardwareConcurrency."""

    def __init__(self, playwright, url: str, *, cores: int | None):
        self.url = url
        self.init_script = CORES_SCRIPT % cores if cores else None
        self.browser = chromium.launch(playwright, webgpu=False)

    def fresh(self):
        """A new context (nothing cached, nothing remembered) with the page loaded; the caller closes it."""
        context = self.browser.new_context()
        if self.init_script:
            context.add_init_script(self.init_script)
        page = context.new_page()
        page.set_default_timeout(STEP_MS)
        page.goto(self.url)
        page.wait_for_function("() => window.peerBench !== undefined")
        return context, page

    def close(self) -> None:
        self.browser.close()


def cold_starts(
    bench: BenchPage, sides: list[Side], *, rounds: int, text: str, results: Results, load_too: bool
) -> None:
    """`rounds` cold starts of each side, alternating; with `load_too`, onnxport's pinned variants also through
    load() as a page calls it."""
    for round_ in range(rounds):
        order = sides if round_ % 2 == 0 else list(reversed(sides))
        for side in order:
            results.cold.setdefault(side.name, []).append(
                _in_fresh_page(bench, "a => peerBench.cold(a)", {**side.page_arg(), "text": text})
            )
        for side in order:
            if load_too and side.side == "onnxport" and side.threads is not None:
                results.cold_load.setdefault(side.dtype, []).append(
                    _in_fresh_page(bench, "a => peerBench.coldLoad(a)", {"variant": side.dtype, "text": text})
                )


def warm_rounds(
    bench: BenchPage,
    sides: list[Side],
    *,
    rounds: int,
    texts: list[str],
    runs: dict[int, int],
    warmup: int,
    settle_rounds: int,
    accuracy_batch: int,
    results: Results,
) -> None:
    """Opens every side on one page, then `settle_rounds` unmeasured rounds and `rounds` measured rounds of `runs`
    calls per batch size, the order reversed each round; then every side's embeddings of all `texts` for the
    accuracy table. The peer's sides on one page share one thread count (onnxruntime-web reads it once): call this
    once per peer thread setting.

    The unmeasured rounds are there because Chromium runs new WebAssembly on its baseline compiler and recompiles
    hot functions in the background: on 2 cores both libraries' calls took 1.5-2x their steady time over the first
    seconds of a page, so "warm" starts when that is over, for both sides alike."""
    context, page = bench.fresh()
    try:
        results.page = page.evaluate("() => peerBench.isolated()")
        results.infos.update(
            page.evaluate(
                "a => peerBench.openAll(a)", {"sides": [s.page_arg() for s in sides], "warmup": warmup, "texts": texts}
            )
        )
        names = [s.name for s in sides]
        per_round = sum(batch * count for batch, count in runs.items())
        for round_ in range(-settle_rounds, rounds):
            order = names if round_ % 2 == 0 else list(reversed(names))
            answer = page.evaluate(
                "a => peerBench.round(a)",
                {
                    "order": order,
                    "runs": {str(b): n for b, n in runs.items()},
                    "texts": texts,
                    "start": (round_ * per_round) % len(texts),
                },
            )
            if round_ < 0:
                continue
            for name, by_batch in answer["times"].items():
                for batch, ms in by_batch.items():
                    results.warm.setdefault(name, {}).setdefault(batch, []).extend(ms)
            for name, count in answer["threads"].items():
                results.threads.setdefault(name, []).append(count)
        for name in names:
            results.embeddings[name] = page.evaluate(
                "a => peerBench.embedAll(a)", {"name": name, "texts": texts, "batch": accuracy_batch}
            )
    finally:
        context.close()


def _in_fresh_page(bench: BenchPage, function: str, arg: dict) -> dict:
    time.sleep(COLD_GAP_S)
    context, page = bench.fresh()
    try:
        return page.evaluate(function, arg)
    finally:
        context.close()
