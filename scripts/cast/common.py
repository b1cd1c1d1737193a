"""Shared by scripts/cast/browser.py and native.py: profile-event parsing and summaries."""

from __future__ import annotations

import json
import statistics


def parse_events(lines: list[str]) -> list[dict]:
    """onnxruntime's chrome-trace events, from the console lines onnxruntime-web prints
    (as web/app/bench.js reads them)."""
    events = []
    for line in lines:
        at = line.find("{")
        if at < 0:
            continue
        text = line[at:].strip().rstrip(",").rstrip("]").strip().rstrip(",")
        try:
            event = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and "dur" in event:
            events.append(event)
    return events


def per_run(events: list[dict]) -> list[dict]:
    """[{"model_run_ms", "kernels": {node name: {"op", "ms", "start_ms"}}}] in run order;
    start_ms is from the run's start."""
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    kernels = [e for e in events if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")]
    out = []
    for run in runs:
        begin, end = run["ts"], run["ts"] + run["dur"]
        nodes = {}
        for e in kernels:
            if begin <= e["ts"] <= end:
                name = e["name"][: -len("_kernel_time")]
                nodes[name] = {"op": e.get("args", {}).get("op_name", "?"), "ms": e["dur"] / 1000,
                               "start_ms": (e["ts"] - begin) / 1000}
        out.append({"model_run_ms": run["dur"] / 1000, "kernels": nodes})
    return out


def bench_js_op_times(events: list[dict], runs: int) -> dict[str, float]:
    """What web/app/bench.js kernelTimes() computes: every _kernel_time event, summed by op type, divided by `runs`."""
    per_op: dict[str, float] = {}
    for e in events:
        if e.get("name", "").endswith("_kernel_time") and e.get("args", {}).get("op_name"):
            op = e["args"]["op_name"]
            per_op[op] = per_op.get(op, 0.0) + e["dur"] / 1000 / runs
    return per_op


def summarize_profile(runs: list[dict], ops=("Cast",)) -> dict:
    """Per run: model_run, the sum of kernels, each node of the given op types (ms)."""
    table = []
    for i, run in enumerate(runs):
        row = {"run": i, "model_run_ms": round(run["model_run_ms"], 4),
               "kernels_ms": round(sum(k["ms"] for k in run["kernels"].values()), 4)}
        for name, k in run["kernels"].items():
            if k["op"] in ops:
                row[name] = {"ms": round(k["ms"], 4), "start_ms": round(k["start_ms"], 4)}
        table.append(row)
    return {"runs": table}


def median(xs):
    return round(statistics.median(xs), 4)


def p10_p90(xs):
    q = statistics.quantiles(xs, n=10)
    return round(q[0], 4), round(q[-1], 4)


def warm_op_times(runs: list[dict]) -> dict[str, float]:
    """{op type: ms per run} over the given runs (what server/onnxport/bench/profile.py computes natively)."""
    per_op: dict[str, float] = {}
    for run in runs:
        for k in run["kernels"].values():
            per_op[k["op"]] = per_op.get(k["op"], 0.0) + k["ms"] / len(runs)
    return dict(sorted(((op, round(ms, 4)) for op, ms in per_op.items()), key=lambda kv: -kv[1])[:6])


def timing_arguments(parser) -> None:
    """The options browser.py and native.py share, so that their figures compare."""
    parser.add_argument("--out", default="/tmp/onnxport-cast")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--profile-runs", type=int, default=10)
    parser.add_argument("--groups", default="tiny,minilm")
    parser.add_argument("--only", default="", help="comma-separated model names: just these, within the groups")
