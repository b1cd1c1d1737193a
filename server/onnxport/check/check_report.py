"""The conformance report for people: a terminal table and an HTML page (the JSON is for machines)."""

from __future__ import annotations

import html

from onnxport.accuracy.browser_runtimes import CHECKED as RUNTIMES
from onnxport.check import skips
from onnxport.check.report_types import BrowserIdentity, CheckReport, CheckRow, Plan, WebGpuScope
from onnxport.text_tables import metric_text, table

HEADERS = [
    "browser",
    "model",
    "variant",
    "form",
    "runtime",
    "status",
    "basis",
    "max abs",
    "metric",
    "warm ms",
    "where",
    "detail",
]


def _max_abs(result: CheckRow) -> str:
    values = [o.get("max_abs", 0.0) for o in (result.get("outputs") or {}).values() if isinstance(o, dict)]
    return f"{max(values):.1e}" if values else "-"


def _basis(result: CheckRow) -> str:
    """What decided the verdict: `floor` (an fp32 file, element-wise against the server's run of it),
    `budget` (fp16/int8: the task metric against fp32, within the variant's budget), `export` (a
    source row: the recipe's export tolerance)."""
    if result.get("basis"):
        return str(result["basis"])
    return "export" if result.get("runtime") == "source" and result.get("status") in ("pass", "fail") else "-"


def labels(results: list[CheckRow]) -> dict[tuple[str, str], str]:
    """(model, variant) -> what people are shown for it, from the rows that carry a `label`: a variant whose
    key is not what its file computes (an already-int8 model's fp32 is "original (int8)"). Others: the key."""
    return {(r["model"], r["variant"]): str(r["label"]) for r in results if r.get("label")}


def _metric(result: CheckRow, fp32: str = "fp32") -> str:
    """The figure the verdict read: against fp32 (shown as `fp32`, its label) for the budget basis, else against
    the reference."""
    if result.get("basis") == "budget":
        text = metric_text(result.get("metric_vs_fp32") or {})
        return f"{text} vs {fp32}" if text != "-" else text
    return metric_text(result.get("metric") or {})


def _where(result: CheckRow) -> str:
    placement = result.get("placement") or {}
    if not placement.get("found"):
        return "-"
    busiest = sorted(placement.get("cpu_op_types", {}).items(), key=lambda kv: -kv[1])
    ops = ", ".join(f"{op} x{n}" for op, n in busiest[:3]) + (", ..." if len(busiest) > 3 else "")
    return f"GPU {placement['webgpu_nodes']}, CPU {placement['cpu_nodes']}" + (f" ({ops})" if ops else "")


def _detail(result: CheckRow) -> str:
    text = result.get("reason") or ""
    diagnostic = (result.get("diagnostic") or {}).get("text")
    if diagnostic:
        # The element-wise difference to the server's run of an fp16/int8 file: shown, not judged.
        text = f"{text} | {diagnostic}" if text else diagnostic
    divergence = result.get("divergence")
    if divergence and "node" in divergence:
        # The node first: it is what to act on, and the table cuts long lines.
        text = (
            f"first divergence: node {divergence['node']} ({divergence['op_type']}), output "
            f"{divergence['output']} at {divergence.get('index')} | {text}"
        )
    return text


def rows(report: CheckReport, detail_width: int | None = 160) -> list[list[str]]:
    """Table cells per result; the terminal cuts the detail, the HTML page does not. A variant is shown by its
    label ("original (int8)"), the JSON's `variant` keeps the key."""
    out = []
    shown = labels(report["results"])
    for r in report["results"]:
        warm = (r.get("timings") or {}).get("warm_run_ms")
        variant = shown.get((r["model"], r["variant"]), r["variant"])
        fp32 = shown.get((r["model"], "fp32"), "fp32")
        out.append(
            [
                r.get("browser") or "-",
                r["model"],
                variant,
                r.get("form") or "-",
                r["runtime"],
                r["status"],
                _basis(r),
                _max_abs(r),
                _metric(r, fp32),
                f"{warm:.1f}" if isinstance(warm, (int, float)) else "-",
                _where(r),
                _detail(r)[:detail_width],
            ]
        )
    return out


def engine_lines(report: CheckReport) -> list[str]:
    """Per engine: its version, what ran (of what its page planned, when it stopped short) by runtime and status,
    its WebGPU adapter and how many WebGPU rows it ran there, its threads as the page has them."""
    lines = []
    for engine, identity in (report.get("browsers") or {}).items():
        rows = [r for r in report["results"] if r.get("browser") == engine]
        plan = (report.get("plans") or {}).get(engine) or Plan(rows=None, webgpu=None)
        page_rows = sum(1 for r in rows if r["runtime"] in RUNTIMES)
        planned = plan.get("rows")
        ran = f"{page_rows} of {planned} page rows ran: " if isinstance(planned, int) and page_rows < planned else ""
        lines.append(
            f"{engine} {identity.get('version', '?')}: {ran}{_counts_by_runtime(rows) or 'no rows'} "
            f"(WebGPU: {_webgpu_text(identity, plan.get('webgpu'))}; threads: {_threads_text(identity)})"
        )
    return lines


def _counts_by_runtime(rows: list[CheckRow]) -> str:
    """`wasm 12 pass; webgpu 1 pass, 1 skipped`: the rows that ran, per runtime (an engine that could not start:
    `start 1 error`)."""
    counts: dict[str, dict[str, int]] = {}
    for r in rows:
        runtime = "start" if r["runtime"] == "-" else r["runtime"]
        counts.setdefault(runtime, {})
        counts[runtime][r["status"]] = counts[runtime].get(r["status"], 0) + 1
    return "; ".join(
        f"{runtime} " + ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
        for runtime, by_status in counts.items()
    )


def _webgpu_text(identity: BrowserIdentity, scope: WebGpuScope | None) -> str:
    if not identity.get("webgpu"):
        return "none"
    adapter = identity.get("adapter") or {}
    name = adapter.get("architecture") or adapter.get("description")
    kind = "a software adapter" if adapter.get("fallback") else "an adapter"
    text = f"{kind}, {name}" if name else f"{kind} that gives no name"
    if scope and scope.get("scope") == "one per model":
        text += f", one row per model ({scope.get('left_out', 0)} left out: --full-webgpu runs them)"
    return text


def _threads_text(identity: BrowserIdentity) -> str:
    """What the page really has: isolation and SharedArrayBuffer (the page's `threads`), else isolation alone (a
    report from before the page said)."""
    threads = identity.get("threads")
    if isinstance(threads, dict) and threads.get("why"):
        return str(threads["why"])
    return "yes" if identity.get("cross_origin_isolated") else "no"


def speed_lines(report: CheckReport) -> list[str]:
    lines = []
    for engine, speed in (report.get("speed") or {}).items():
        figures = ", ".join(
            f"{runtime} x{s['median_ratio']} ({s['rows']} rows)" for runtime, s in speed["runtimes"].items()
        )
        if figures:
            lines.append(f"{engine} warm time against {speed['against']} (median ratio): {figures}")
    return lines


def finding_lines(report: CheckReport) -> list[str]:
    shown = labels(report.get("results") or [])
    return [
        f"engines differ on {f['model']} {shown.get((f['model'], f['variant']), f['variant'])}"
        f"{' (' + str(f['form']) + ' form)' if f.get('form') else ''} {f['runtime']}: {f['text']}"
        for f in report.get("findings") or []
    ]


def text_table(report: CheckReport) -> str:
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.get("summary", {}).items()))
    # The table cuts the detail column: why rows were skipped or refused is said in full under the counts.
    return "\n".join(
        [
            table(HEADERS, rows(report)),
            "",
            counts,
            *engine_lines(report),
            *speed_lines(report),
            *finding_lines(report),
            *skips.not_failure_lines(report["results"]),
        ]
    )


def matrix_html(report: CheckReport) -> str:
    """model x variant x form down, runtime x engine across: each cell the row's status."""
    cells: dict[tuple[str, str, str], dict[tuple[str, str], CheckRow]] = {}
    columns: list[tuple[str, str]] = []
    for r in report["results"]:
        if not r.get("browser") or r["model"] == "-" or r["runtime"] in ("preprocessing", "answers"):
            continue
        column = (r["runtime"], str(r["browser"]))
        if column not in columns:
            columns.append(column)
        cells.setdefault((r["model"], r["variant"], r.get("form") or "-"), {})[column] = r
    columns.sort()
    shown = labels(report["results"])
    head = "".join(f"<th>{html.escape(runtime)}<br>{html.escape(engine)}</th>" for runtime, engine in columns)
    body = ""
    for (model, variant, form), row in cells.items():
        tds = "".join(
            f"<td class='{html.escape(row[c]['status'])}' title='{html.escape(row[c].get('reason') or '')}'>"
            f"{html.escape(row[c]['status'])}</td>"
            if c in row
            else "<td>-</td>"
            for c in columns
        )
        names = "".join(f"<td>{html.escape(text)}</td>" for text in (model, shown.get((model, variant), variant), form))
        body += f"<tr>{names}{tds}</tr>"
    return (
        f"<table><thead><tr><th>model</th><th>variant</th><th>form</th>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def to_html(report: CheckReport) -> str:
    body = "".join(
        f"<tr class='{html.escape(row[5])}'>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows(report, detail_width=None)
    )
    engines = "".join(f"<li>{html.escape(line)}</li>" for line in [*engine_lines(report), *speed_lines(report)])
    agents = "".join(
        f"<li>{html.escape(engine)}: {html.escape(str(identity.get('user_agent', '')))}</li>"
        for engine, identity in (report.get("browsers") or {}).items()
    )
    findings = "".join(f"<li>{html.escape(line)}</li>" for line in finding_lines(report))
    incomplete = (
        f"<p class='error'><b>Incomplete:</b> {html.escape(str(report['incomplete']))}; the rows below are the "
        "finished ones.</p>"
        if report.get("incomplete")
        else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>onnxport conformance</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem}}table{{border-collapse:collapse}}
td,th{{border-bottom:1px solid #ddd;padding:.25rem .5rem;text-align:left;font-size:.9rem}}
.pass{{background:#eaf7ea}}.fail,.error,.timeout{{background:#fdeaea}}.skipped,.unsupported{{color:#666}}</style></head>
<body><h1>onnxport conformance</h1>
<p>{html.escape(str(report.get("created") or ""))}</p>{incomplete}
<h2>Engines</h2><ul>{engines}</ul><ul>{agents}</ul>
<h2>Where the engines differ</h2>
<ul>{findings or "<li>nowhere: every row has the same verdict in every engine</li>"}</ul>
<h2>Matrix</h2>{matrix_html(report)}
<h2>Rows</h2>
<p>basis: <b>floor</b>, a file that computes in fp32, judged element by element against the server's run
of it within onnxruntime-web's own floor; <b>budget</b>, an fp16 or int8 file, judged by its task metric
against the server's fp32 on the same inputs within the variant's budget (its element-wise difference
to the server's run is in the detail column, a diagnostic); <b>export</b>, the fp32 file against the
source framework.</p>
<table><thead><tr>{"".join(f"<th>{h}</th>" for h in HEADERS)}</tr></thead><tbody>{body}</tbody></table>
{"".join(f"<p>{html.escape(line)}</p>" for line in skips.not_failure_lines(report.get("results", [])))}
</body></html>
"""
