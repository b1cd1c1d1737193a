"""The aggregation rule: a group's verdict from its votes, and its times over the passing clients."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Sequence

from onnxport.json_boundary import JsonObject

FAIL_SHARE = 0.667  # published; the rule itself is exact: 3 * votes >= 2 * clients
TIMES = ("create_ms", "first_run_ms", "warm_run_ms")
QUANTILES = (("p10", 10), ("p25", 25), ("p75", 75), ("p90", 90))


def verdict(passes: int, fails: int, k: int) -> str:
    """few: fewer than k clients; fail (pass): at least k clients and 2/3 of all agree on it; else mixed."""
    clients = passes + fails
    if clients < k:
        return "few"
    if fails >= k and 3 * fails >= 2 * clients:
        return "fail"
    if passes >= k and 3 * passes >= 2 * clients:
        return "pass"
    return "mixed"


def times(values: Sequence[float], k: int) -> JsonObject | None:
    """Median and quantiles over one value per distinct passing client; None below k clients, so fewer
    than k liars can never set a published time alone."""
    if len(values) < k:
        return None
    # Twentieths, interpolated as numpy.percentile's default (a tenth of its cost on a group's few values).
    points = statistics.quantiles(values, n=20, method="inclusive") if len(values) > 1 else [values[0]] * 19
    found = {"median": round(points[9], 3)}
    found.update({name: round(points[q // 5 - 1], 3) for name, q in QUANTILES})
    found["clients"] = len(values)
    return found


def fail_metric(pairs: Sequence[tuple[str, float | None]]) -> JsonObject | None:
    """The failing votes' metric for display: its most reported name, the median of that name's values."""
    named = [(name, value) for name, value in pairs if name is not None]
    if not named:
        return None
    name = Counter(n for n, _ in named).most_common(1)[0][0]
    values = [v for n, v in named if n == name and v is not None]
    return {"name": name, "median": round(statistics.median(values), 6) if values else None}
