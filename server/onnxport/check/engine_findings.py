"""Differences between engines on the same row (model, variant, form, runtime): findings in their own right.

One engine passing where another fails, or two engines whose WebAssembly answers differ from the server's by
different amounts, says the runtime behaves differently by engine, which neither verdict alone shows. On
WebAssembly every engine runs the same onnxruntime build, so its numbers should agree to the bit; WebGPU
numbers differ with the adapter by design, so there only the status is compared.
"""

from __future__ import annotations

from collections import defaultdict

from onnxport.accuracy.browser_runtimes import WASM
from onnxport.check.report_types import CheckRow, Finding, _FindingKey
from onnxport.harness import speed_ratio
from onnxport.json_boundary import JsonObject

# Statuses that say nothing about the arithmetic: a row the engine could not or did not run.
NOT_RUN = ("skipped", "unsupported")


def _key(row: CheckRow) -> tuple[str, str, str, str]:
    return row["model"], row["variant"], row.get("form") or "-", row["runtime"]


def _max_abs(row: CheckRow) -> float | None:
    found = [o.get("max_abs") for o in (row.get("outputs") or {}).values() if isinstance(o, dict)]
    values: list[float] = [v for v in found if isinstance(v, (int, float))]
    return max(values) if values else None


def compare(results: list[CheckRow]) -> list[Finding]:
    """One finding per row key whose engines disagree: on the status, or (all passing) on the difference to
    the server's answer."""
    by_key: dict[tuple[str, str, str, str], dict[str, CheckRow]] = defaultdict(dict)
    for row in results:
        # A skipped row was not tried (no WebGPU adapter, a tensor the page cannot carry): the engine line and
        # the row say why; only rows an engine ran are compared.
        if (engine := row.get("browser")) and row.get("model") != "-" and row["status"] != "skipped":
            by_key[_key(row)][engine] = row
    findings: list[Finding] = []
    for (model, variant, form, runtime), rows in sorted(by_key.items()):
        if len(rows) < 2:
            continue
        statuses = {engine: row["status"] for engine, row in rows.items()}
        base: _FindingKey = {
            "model": model,
            "variant": variant,
            "form": None if form == "-" else form,
            "runtime": runtime,
            "statuses": statuses,
        }
        if len(set(statuses.values())) > 1:
            reasons = {engine: row.get("reason") for engine, row in rows.items() if row.get("reason")}
            findings.append(
                {
                    **base,
                    "kind": "status",
                    "reasons": reasons,
                    "text": ", ".join(f"{engine} {status}" for engine, status in statuses.items()),
                }
            )
            continue
        if runtime not in WASM:
            continue
        differences = {engine: _max_abs(row) for engine, row in rows.items() if row["status"] not in NOT_RUN}
        known = {engine: value for engine, value in differences.items() if value is not None}
        if len(known) > 1 and len(set(known.values())) > 1:
            findings.append(
                {
                    **base,
                    "kind": "numbers",
                    "max_abs": known,
                    "text": "max abs to the server: "
                    + ", ".join(f"{engine} {value:.2g}" for engine, value in known.items()),
                }
            )
    return findings


def speed(results: list[CheckRow], engines: list[str]) -> dict[str, JsonObject]:
    """Each engine's warm run time against the first engine's on the same rows (same page, same run), per
    runtime, over rows both passed (harness/speed_ratio.py: the rule the bench's figures follow too)."""
    if len(engines) < 2:
        return {}
    warm: dict[str, dict[speed_ratio.Key, float]] = defaultdict(dict)
    for row in results:
        ms = (row.get("timings") or {}).get("warm_run_ms")
        if (engine := row.get("browser")) and row["status"] == "pass" and isinstance(ms, (int, float)):
            warm[engine][_key(row)] = ms
    first = engines[0]
    return {engine: speed_ratio.against(first, warm[engine], warm[first]) for engine in engines[1:]}
