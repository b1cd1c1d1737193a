"""Repeat a call, warm up first, keep the median and the 90th percentile."""

from __future__ import annotations

import statistics
import time
from typing import Callable

from onnxport.bench.report_types import Timing


def measure(call: Callable[[], object], *, runs: int, warmup: int = 3) -> Timing:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return summarize(samples)


def summarize(samples_ms: list[float]) -> Timing:
    ordered = sorted(samples_ms)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return {"median_ms": round(statistics.median(ordered), 4), "p90_ms": round(p90, 4), "runs": len(ordered)}
