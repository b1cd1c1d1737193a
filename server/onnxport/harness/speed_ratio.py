"""One engine's warm run times against another's on the same rows of one run: the figure `onnxport check` and
`onnxport bench` both report per browser engine, by one rule."""

from __future__ import annotations

import statistics
from collections import defaultdict

from onnxport.json_boundary import JsonObject

# Rows faster than this in the reference engine are left out: a sub-millisecond run (iris: 0.2 to 0.3 ms) is mostly
# the engines' coarsened timers (Firefox and WebKit count in 20 us steps or more) and call overhead, not a speed.
SPEED_FLOOR_MS = 5.0

Key = tuple[str, str, str, str]  # model, variant, form, runtime


def against(reference_engine: str, mine: dict[Key, float], reference: dict[Key, float]) -> JsonObject:
    """`mine` (key -> warm ms) over `reference` per runtime: the median ratio over the keys both have and the
    reference took at least SPEED_FLOOR_MS on (x2: twice as slow as the reference), and how many rows."""
    by_runtime: dict[str, list[float]] = defaultdict(list)
    for key, ms in mine.items():
        if reference.get(key, 0.0) >= SPEED_FLOOR_MS:
            by_runtime[key[3]].append(ms / reference[key])
    return {
        "against": reference_engine,
        "runtimes": {
            runtime: {"median_ratio": round(statistics.median(ratios), 2), "rows": len(ratios)}
            for runtime, ratios in sorted(by_runtime.items())
        },
    }
