"""Each browser engine's warm runs against Chromium's, on the same model, variant, form and runtime of one bench run."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

# Rows faster than this in Chromium are left out of the summary: a sub-millisecond run (iris: 0.3 ms) is mostly
# the engines' coarsened timers (Firefox and WebKit count in 20 us steps or more) and call overhead, not a speed.
# The same floor as the check's (check/engine_findings.py), so the two commands' figures compare.
SPEED_FLOOR_MS = 5.0

Key = tuple[str, str, str, str]  # model, variant, form ("as built" for the variant's own file), runtime


def sections(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """engine -> its section; a report from before `browsers` has one Chromium section, under `browser`."""
    if report.get("browsers"):
        return report["browsers"]
    return {"chromium": report["browser"]} if report.get("browser") else {}


def warm(section: dict[str, Any]) -> dict[Key, float]:
    """The section's rows that ran: key -> warm median ms."""
    return {(r["model"], r["variant"], r.get("form") or "as built", r["runtime"]): r["warm"]["median_ms"]
            for r in section.get("results", []) if r["status"] == "ok" and r.get("warm")}


def against(engine_section: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    """`engine_section`'s warm time over the reference's, per runtime: the median ratio over the rows both ran
    and the reference took at least SPEED_FLOOR_MS on (x2: twice as slow as the reference)."""
    mine, base = warm(engine_section), warm(reference)
    by_runtime: dict[str, list[float]] = defaultdict(list)
    for key, ms in mine.items():
        if base.get(key, 0.0) >= SPEED_FLOOR_MS:
            by_runtime[key[3]].append(ms / base[key])
    return {"against": reference["engine"], "runtimes": {
        runtime: {"median_ratio": round(statistics.median(ratios), 2), "rows": len(ratios)}
        for runtime, ratios in sorted(by_runtime.items())}}
