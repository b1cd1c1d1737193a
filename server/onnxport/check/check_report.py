"""The conformance report for people: a terminal table and an HTML page (the JSON is for machines)."""

from __future__ import annotations

import html
from typing import Any

from onnxport.check import skips
from onnxport.text_tables import metric_text, table

HEADERS = ["model", "variant", "form", "runtime", "status", "basis", "max abs", "metric", "warm ms", "where", "detail"]


def _max_abs(result: dict[str, Any]) -> str:
    values = [o.get("max_abs", 0.0) for o in (result.get("outputs") or {}).values() if isinstance(o, dict)]
    return f"{max(values):.1e}" if values else "-"


def _basis(result: dict[str, Any]) -> str:
    """What decided the verdict: `floor` (an fp32 file, element-wise against the server's run of it),
    `budget` (fp16/int8: the task metric against fp32, within the variant's budget), `export` (a
    source row: the recipe's export tolerance)."""
    if result.get("basis"):
        return str(result["basis"])
    return "export" if result.get("runtime") == "source" and result.get("status") in ("pass", "fail") else "-"


def _metric(result: dict[str, Any]) -> str:
    """The figure the verdict read: against fp32 for the budget basis, else against the reference."""
    if result.get("basis") == "budget":
        text = metric_text(result.get("metric_vs_fp32") or {})
        return f"{text} vs fp32" if text != "-" else text
    return metric_text(result.get("metric") or {})


def _where(result: dict[str, Any]) -> str:
    placement = result.get("placement") or {}
    if not placement.get("found"):
        return "-"
    busiest = sorted(placement.get("cpu_op_types", {}).items(), key=lambda kv: -kv[1])
    ops = ", ".join(f"{op} x{n}" for op, n in busiest[:3]) + (", ..." if len(busiest) > 3 else "")
    return f"GPU {placement['webgpu_nodes']}, CPU {placement['cpu_nodes']}" + (f" ({ops})" if ops else "")


def _detail(result: dict[str, Any]) -> str:
    text = result.get("reason") or ""
    diagnostic = (result.get("diagnostic") or {}).get("text")
    if diagnostic:
        # The element-wise difference to the server's run of an fp16/int8 file: shown, not judged.
        text = f"{text} | {diagnostic}" if text else diagnostic
    divergence = result.get("divergence")
    if divergence and "node" in divergence:
        # The node first: it is what to act on, and the table cuts long lines.
        text = (f"first divergence: node {divergence['node']} ({divergence['op_type']}), output "
                f"{divergence['output']} at {divergence.get('index')} | {text}")
    return text


def rows(report: dict[str, Any], detail_width: int | None = 160) -> list[list[str]]:
    """Table cells per result; the terminal cuts the detail, the HTML page does not."""
    out = []
    for r in report["results"]:
        warm = (r.get("timings") or {}).get("warm_run_ms")
        out.append([r["model"], r["variant"], r.get("form") or "-", r["runtime"], r["status"], _basis(r), _max_abs(r),
                    _metric(r), f"{warm:.1f}" if isinstance(warm, (int, float)) else "-", _where(r),
                    _detail(r)[:detail_width]])
    return out


def text_table(report: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.get("summary", {}).items()))
    # The table cuts the detail column: why rows were skipped or refused is said in full under the counts.
    return "\n".join([table(HEADERS, rows(report)), "", counts, *skips.not_failure_lines(report["results"])])


def to_html(report: dict[str, Any]) -> str:
    body = "".join(
        f"<tr class='{html.escape(row[4])}'>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows(report, detail_width=None)
    )
    browser = report.get("browser", {})
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>onnxport conformance</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem}}table{{border-collapse:collapse}}
td,th{{border-bottom:1px solid #ddd;padding:.25rem .5rem;text-align:left;font-size:.9rem}}
.pass{{background:#eaf7ea}}.fail,.error{{background:#fdeaea}}.skipped,.unsupported{{color:#666}}</style></head>
<body><h1>onnxport conformance</h1>
<p>{html.escape(report.get('created', ''))} · {html.escape(browser.get('user_agent', ''))}</p>
<p>WebGPU: {html.escape(str((browser.get('adapter') or {}).get('description') or browser.get('webgpu')))} ·
threads available: {html.escape(str(browser.get('cross_origin_isolated')))}</p>
<p>basis: <b>floor</b>, a file that computes in fp32, judged element by element against the server's run
of it within onnxruntime-web's own floor; <b>budget</b>, an fp16 or int8 file, judged by its task metric
against the server's fp32 on the same inputs within the variant's budget (its element-wise difference
to the server's run is in the detail column, a diagnostic); <b>export</b>, the fp32 file against the
source framework.</p>
<table><thead><tr>{''.join(f'<th>{h}</th>' for h in HEADERS)}</tr></thead><tbody>{body}</tbody></table>
{''.join(f'<p>{html.escape(line)}</p>' for line in skips.not_failure_lines(report.get("results", [])))}
</body></html>
"""
