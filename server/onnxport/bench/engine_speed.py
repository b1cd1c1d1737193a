"""Each browser engine's warm runs against Chromium's, on the same model, variant, form and runtime of one bench run."""

from __future__ import annotations

from onnxport.bench.report_types import BenchReport, EngineSection
from onnxport.harness import speed_ratio
from onnxport.json_boundary import JsonObject

Key = speed_ratio.Key  # model, variant, form ("as built" for the variant's own file), runtime


def sections(report: BenchReport) -> dict[str, EngineSection]:
    """engine -> its section; a report from before `browsers` has one Chromium section, under `browser`."""
    if report.get("browsers"):
        return report["browsers"]
    return {"chromium": report["browser"]} if report.get("browser") else {}


def warm(section: EngineSection) -> dict[Key, float]:
    """The section's rows that ran: key -> warm median ms."""
    return {
        (r["model"], r["variant"], r.get("form") or "as built", r["runtime"]): r["warm"]["median_ms"]
        for r in section.get("results", [])
        if r["status"] == "ok" and r.get("warm")
    }


def against(engine_section: EngineSection, reference: EngineSection) -> JsonObject:
    """`engine_section`'s warm time over the reference's, per runtime (harness/speed_ratio.py: the check's rule)."""
    return speed_ratio.against(reference["engine"], warm(engine_section), warm(reference))
