"""The corpus table: every third-party model imported, its variants beside the raw tools' on the same model.

For each test directory in tests/data/third-party/ (`make testdata`, scripts/testdata/fetch_third_party.py):

1. `onnxport import DIR --name NAME --quiet` into a temporary repository (a subprocess, the command a
   user runs), and from its manifest entry, per variant: status, size ratio to fp32, the error against
   fp32 (the vs_fp32 task metric: scaled max error for these generic imports), how many nodes a
   fallback search kept in float, and the reason of every variant not served (the import and the row
   are tests/fixtures/corpus_rows.py's, which tests/convert/test_corpus.py uses too);
2. the raw tools with their documented defaults (scripts/corpus/raw_tools.py, also a subprocess: a crash in
   a converter costs that model's row, not the run), judged by the same budgets;
3. an independent look at our own artifacts: raw_tools' judge (not onnxport's code) run on every
   variant onnxport produced, so "the same budgets" is checked, not assumed.

Prints per-model timings and the docs/notes/measurements.md table (also written to /tmp/corpus_table.md), and with
`--write` records the rows in tests/data/corpus_table.json, which tests/convert/test_corpus.py holds
every later import to. Without `--write` it says which recorded statuses changed.

    .venv/bin/python scripts/corpus/corpus_table.py [NAME ...] [--write] [--no-raw]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import raw_tools
from raw_tools import KINDS as RAW_KINDS  # the raw tools make no weight-only variant

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "testdata"))  # each model's task is its fetcher's, which says why
sys.path.insert(0, str(ROOT / "tests"))  # the rows: the corpus test reads imports the same way

from fetch_third_party import TASKS  # noqa: E402

from fixtures import corpus_rows  # noqa: E402
from fixtures.corpus_rows import (  # noqa: E402
    CORPUS,
    KINDS,
    REWRITE,
    TABLE,
    TIMEOUT,
    VARIANTS,
    machine,
    node_count,
    served,
)

MARKDOWN = Path(tempfile.gettempdir()) / "corpus_table.md"


def corpus_names() -> list[str]:
    return sorted(p.parent.name for p in CORPUS.glob("*/model.onnx"))


def task(name: str) -> str:
    """The model's `--task` (scripts/testdata/fetch_third_party.py says why for each)."""
    return TASKS.get(name, "generic")


# --------------------------------------------------------------------------- the raw tools' rows


def raw_model(folder: Path, timeout: float = TIMEOUT) -> dict:
    """scripts/corpus/raw_tools.py on one test directory, in its own process: {kind: row}, seconds and cpu."""
    with tempfile.TemporaryDirectory(prefix="corpus-raw-") as tmp:
        out = Path(tmp) / "rows.json"
        command = [
            sys.executable,
            str(Path(__file__).with_name("raw_tools.py")),
            str(folder),
            "--json",
            str(out),
            "--task",
            task(folder.name),
        ]
        done = corpus_rows.run_measured(command, tmp, timeout)
        if done.returncode == 0:
            rows = json.loads(out.read_text())
        else:  # the process died (a native crash, a timeout): every tool not yet judged is lost with it
            rows = {
                k: {
                    "status": "failed",
                    "size_ratio": None,
                    "error": None,
                    "reason": f"raw_tools.py died: {corpus_rows.failure(done, timeout)}",
                }
                for k in RAW_KINDS
            }
    for row in rows.values():
        row.pop("seconds", None)
    return {"rows": rows, "seconds": round(done.wall, 1), "cpu_seconds": round(done.cpu, 1)}


def cross_check(folder: Path, row: dict) -> tuple[int, list[str]]:
    """raw_tools' judge on onnxport's own artifacts: where its verdict differs from the manifest's.

    Only variants with a file whose verdict is the budget are judged (a skip or a crash has no figure).
    Returns (variants judged, disagreements).
    """
    artifacts = row.get("_artifacts") or {}
    if "fp32" not in artifacts:
        return 0, []
    _, feeds = raw_tools.read_test_directory(folder)
    fp32 = Path(artifacts["fp32"])
    reference = raw_tools.run(raw_tools.session(str(fp32)), feeds)
    disagreements, judged_count = [], 0
    for kind in KINDS:
        ours = row["variants"].get(kind, {})
        if kind not in artifacts or ours.get("reason_kind") not in (None, "over budget"):
            continue
        judged = raw_tools.judge(
            kind, Path(artifacts[kind]).read_bytes(), feeds, reference, fp32.stat().st_size, task(folder.name)
        )
        judged_count += 1
        if (judged["status"] == "ok") != (ours["status"] == "ok"):
            disagreements.append(
                f"{kind}: manifest {ours['status']} (error {ours['error']}), independent judge "
                f"{judged['status']} (error {judged['error']}: {judged['reason']})"
            )
    return judged_count, disagreements


# --------------------------------------------------------------------------- counts and the table


def counts(models: dict[str, dict]) -> dict:
    ours = {name: m["variants"] for name, m in models.items()}
    raw = {name: m["raw"] for name, m in models.items() if "raw" in m}
    by_status = {kind: {} for kind in KINDS}
    for variants in ours.values():
        for kind in KINDS:
            status = variants.get(kind, {}).get("status", "import failed")
            by_status[kind][status] = by_status[kind].get(status, 0) + 1
    return {
        "models": len(models),
        "onnxport_served": served(ours),
        "onnxport_by_status": {k: dict(sorted(v.items())) for k, v in by_status.items()},
        "raw_served": served(raw),
        # Where the raw tools serve a variant onnxport does not: the cases to look at.
        "raw_only": {
            kind: sorted(
                n
                for n in raw
                if raw[n].get(kind, {}).get("status") == "ok" and ours[n].get(kind, {}).get("status") != "ok"
            )
            for kind in KINDS
        },
        "onnxport_only": {
            kind: sorted(
                n
                for n in raw
                if raw[n].get(kind, {}).get("status") != "ok" and ours[n].get(kind, {}).get("status") == "ok"
            )
            for kind in KINDS
        },
    }


def compact(value: float | str | None) -> str:
    """1.2e-3 style, 2 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


SHORTER = (  # (pattern, replacement), in order: a reason as a table cell
    (r"^[\w.-]+ (fp16|int8-dynamic|int8-static): ", ""),  # "model variant: " label
    (r"onnxruntime( [\d.]+)? cannot load it: (\w+: )?(\[ONNXRuntimeError\] : \d+ : \w+ : )?", "ort cannot load: "),
    (
        r"onnxruntime( [\d.]+)? (failed to|cannot) run it: (\w+: )?(\[ONNXRuntimeError\] : \d+ : \w+ : )?",
        "ort cannot run: ",
    ),
    (r"This is an invalid model\. ", ""),
    (
        (
            r"(ort cannot load: ).*?Type Error: Type \(?'?tensor\((\w+)\)'?\)? of (output arg|input parameter) \((.*?)\)"  # noqa: E501
            r" of (node|operator) \((.*?)\).*"
        ),
        r"\1\2 where float is expected, at \6",
    ),
    (
        r"(ort cannot load: ).*?Data in initializer '(.*?)' has element type tensor\((\w+)\).*",
        r"\1\3 initializer \2 where float is expected",
    ),
    (r"^int8 is ([\d.]+x) the size of fp32, not( [\d.]+x)? smaller.*", r"\1 fp32, not\2 smaller"),
    (
        r"^(fp16|int8) file [\d,]+ bytes is ([\d.]+x) the size of fp32 .*?not at least ([\d.]+x) smaller.*",
        r"\2 fp32, not \3 smaller",
    ),
    (r"^nothing to quantize.*", "nothing to quantize"),
    (r"^no operator that onnxruntime quantizes.*", "nothing to quantize"),
    (r"^no float operator that fp16 conversion applies to", "nothing to convert"),
    (r"(subgraphs), which .*", r"\1"),
    (r"^(\w+) failed: (Exception: )?", r"\1: "),  # a raw tool's step
    (r"max error / max \|fp32\| (\S+) > budget (\S+)", r"\1 > \2"),
    (r"mean error / max \|fp32\| (\S+) > budget (\S+)", r"mean \1 > \2"),
    (r"max error / max \|fp32\| (\S+) > the serving bound \(90% of the budget\) ([^\s;]+)", r"\1 > \2"),
    (r"mean error / max \|fp32\| (\S+) > the serving bound \(90% of the budget\) ([^\s;]+)", r"mean \1 > \2"),
    (r"per-step top-1 agreement with fp32 (\S+) < budget (\S+)", r"steps \1 < \2"),
    (r"top-1 agreement with fp32 (\S+) < budget (\S+)", r"top-1 \1 < \2"),
    (r"(scaled_max_abs|scaled_mean_abs|top1_agreement|step_agreement) (\S+) ([<>]) budget (\S+)", r"\2 \3 \4"),
    (
        r"; still outside with up to (\d+) of its (\d+) candidate nodes kept in float",
        r" with up to \1/\2 nodes in float",
    ),
)
CELL_CHARS = 72


def short_reason(reason: str | None) -> str:
    text = reason or ""
    for pattern, replacement in SHORTER:
        text = re.sub(pattern, replacement, text)
    text = text.replace("|", "\\|")
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 3].rstrip() + "..."


def cell(row: dict | None) -> str:
    if row is None:
        return "-"
    if row["status"] == "ok":
        text = f"ok {row['size_ratio']:.2f}x {compact(row['error'])}"
        kept = row.get("fallback_kept_float")
        return f"{text} ({kept} kept in float)" if kept else text
    return f"{row['status']}: {short_reason(row.get('reason'))}"


def markdown(table: dict) -> str:
    models, total = table["models"], table["counts"]
    n = total["models"]
    header = "| model | task | " + " | ".join(KINDS) + " |\n|---|---|" + "---|" * len(KINDS) + "\n"
    intro = (
        "onnxport (`onnxport import --task TASK`, fallback on): status, size vs fp32, the task metric vs "
        "fp32 (`ok 0.50x 1.2e-3`; agreements are 1 at best), or why it is not served."
    )
    lines = [intro, "", header.rstrip("\n")]
    for name, model in models.items():
        if model.get("import_error"):
            lines.append(
                f"| {name} | {task(name)} | import failed: {short_reason(model['import_error'])} |"
                + " |" * (len(KINDS) - 1)
            )
        else:
            cells = " | ".join(cell(model["variants"].get(k)) for k in KINDS)
            lines.append(f"| {name} | {task(name)} | {cells} |")
    lines += [
        "",
        "The raw tools with their documented defaults (scripts/corpus/raw_tools.py), same inputs and budgets:",
        "",
        header.rstrip("\n"),
    ]
    for name, model in models.items():
        if "raw" in model:
            lines.append(f"| {name} | {task(name)} | " + " | ".join(cell(model["raw"].get(k)) for k in KINDS) + " |")
    ours, raw = total["onnxport_served"], total["raw_served"]
    lines += [
        "",
        f"Served variants, of {n} models:",
        "",
        "| approach | " + " | ".join(KINDS) + " | all |",
        "|---|" + "---|" * (len(KINDS) + 1),
        "| onnxport | " + " | ".join(f"{ours[k]}/{n}" for k in KINDS) + f" | {sum(ours.values())}/{n * len(KINDS)} |",
        "| raw tools, defaults | "
        + " | ".join(f"{raw[k]}/{n}" for k in KINDS)
        + f" | {sum(raw.values())}/{n * len(KINDS)} |",
    ]
    statuses = "; ".join(
        f"{k}: " + ", ".join(f"{c} {s}" for s, c in total["onnxport_by_status"][k].items()) for k in KINDS
    )
    lines += ["", f"onnxport by status: {statuses}."]
    raw_only = [f"{k} {', '.join(v)}" for k, v in total["raw_only"].items() if v]
    if raw_only:
        lines.append(f"Served by the raw tools but not by onnxport: {'; '.join(raw_only)}.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the run


def load_recorded() -> dict | None:
    return json.loads(TABLE.read_text()) if TABLE.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="corpus models (default: all); with --write, only their rows change")
    parser.add_argument("--write", action="store_true", help=f"record the rows in {TABLE.relative_to(ROOT)}")
    parser.add_argument(
        "--no-raw", action="store_true", help="keep the recorded raw-tool rows instead of rerunning them"
    )
    parser.add_argument(
        "--markdown", type=Path, default=MARKDOWN, help=f"where the table goes too (default {MARKDOWN})"
    )
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per model and approach")
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="models at a time (default 2: much of an import is single-threaded Python)",
    )
    args = parser.parse_args(argv)

    available = corpus_names()
    if not available:
        print(f"corpus_table: no models in {CORPUS}: run `make testdata`", file=sys.stderr)
        return 1
    names = args.models or available
    unknown = sorted(set(names) - set(available))
    if unknown:
        print(f"corpus_table: not in {CORPUS}: {', '.join(unknown)} (have: {', '.join(available)})", file=sys.stderr)
        return 1
    recorded = load_recorded()
    if (args.no_raw or args.models) and args.write and recorded is None:
        print(
            f"corpus_table: {TABLE} does not exist yet: run on the whole corpus with the raw tools first",
            file=sys.stderr,
        )
        return 1

    def one(name: str, repository: Path) -> tuple[dict, dict, tuple[int, list[str]]]:
        folder = CORPUS / name
        row = corpus_rows.import_model(folder, name, repository, task(name), args.timeout)
        try:
            disagreements = cross_check(folder, row)
        except Exception as exc:
            disagreements = (0, [f"could not run: {raw_tools.first_line(exc)}"])
        times = {
            "ours": (row.pop("seconds"), row.pop("cpu_seconds")),
            "raw": (0.0, 0.0),
            "peak_rss_mb": row.pop("peak_rss_mb"),
        }  # tests/convert/test_corpus.py records and bounds it
        if args.no_raw:
            raw = ((recorded or {}).get("models", {}).get(name) or {}).get("raw")
        else:
            ran = raw_model(folder, args.timeout)
            raw, times["raw"] = ran["rows"], (ran["seconds"], ran["cpu_seconds"])
        row.pop("_artifacts", None)
        row["raw"] = raw
        return row, times, disagreements

    if args.no_raw:
        missing = [n for n in names if "raw" not in ((recorded or {}).get("models", {}).get(n) or {})]
        if missing:
            print(f"corpus_table: no recorded raw rows for {', '.join(missing)}: run without --no-raw", file=sys.stderr)
            return 1
    models: dict[str, dict] = {}
    started = time.perf_counter()
    print(
        f"{args.jobs} model(s) at a time. Seconds: wall (what this run waited) / CPU (user + system: what the"
        " work costs, whatever else shares the cores)"
    )
    print(
        f"{'model':30s} {'onnxport':>13s} {'peak RSS':>9s} {'raw tools':>11s}  {' / '.join(KINDS)}  "
        f"(raw: {' / '.join(RAW_KINDS)})",
        flush=True,
    )
    cpu_total, judged_total, disagreeing = 0.0, 0, 0
    with tempfile.TemporaryDirectory(prefix="corpus-table-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        # The biggest graphs first (their fallback searches take longest), so none starts last.
        order = sorted(names, key=lambda n: -node_count(CORPUS / n))
        futures = {pool.submit(one, name, Path(tmp) / name): name for name in order}
        for future in as_completed(futures):
            name = futures[future]
            row, times, (judged, disagreements) = future.result()
            judged_total, disagreeing = judged_total + judged, disagreeing + len(disagreements)
            models[name] = row
            raw = row["raw"]
            cpu_total += times["ours"][1] + times["raw"][1]
            statuses = " / ".join(row["variants"].get(k, {}).get("status", "-") for k in KINDS)
            raw_statuses = " / ".join(raw.get(k, {}).get("status", "-") for k in RAW_KINDS)
            (ours_wall, ours_cpu), (raw_wall, raw_cpu) = times["ours"], times["raw"]
            print(
                f"{name:30s} {ours_wall:6.1f}/{ours_cpu:5.1f}s {times['peak_rss_mb']:6d} MB "
                f"{raw_wall:5.1f}/{raw_cpu:4.1f}s  {statuses}  "
                f"(raw: {raw_statuses})",
                flush=True,
            )
            if row["import_error"]:
                print(f"    import failed: {row['import_error']}", flush=True)
            for line in disagreements:
                print(f"    independent judge disagrees: {line}", flush=True)
    elapsed = time.perf_counter() - started
    print(f"{'total':30s} {elapsed:6.1f}s wall, {cpu_total:.1f}s CPU", flush=True)
    print(
        f"independent judge (raw_tools.judge on onnxport's artifacts): {judged_total - disagreeing} of "
        f"{judged_total} verdicts agree with the manifest's",
        flush=True,
    )

    if args.models and recorded is not None:  # a partial run: the other rows as recorded
        models = {**recorded["models"], **models}
    models = dict(sorted(models.items()))
    table = {
        "about": (
            "Every corpus model (tests/data/third-party, `make testdata`) imported by onnxport, beside the "
            "raw tools with their documented defaults (scripts/corpus/raw_tools.py). Written by "
            f"`{REWRITE}`; tests/convert/test_corpus.py compares every import with it."
        ),
        "budgets": {
            t: {"metric": metric, "fp16": fp16, "int8": int8}
            for t, (metric, fp16, int8, _) in raw_tools.METRICS.items()
        },
        "tasks": {name: task(name) for name in models},
        "raw_tools": raw_tools.TOOLS,
        "tools": raw_tools.tool_versions(),
        "recorded_on": machine(),
        "models": models,
    }
    table["counts"] = counts(models)
    text = markdown(table)
    args.markdown.write_text(text)
    print()
    print(text, end="")
    print(f"\n(also in {args.markdown})")

    if args.write:
        TABLE.write_text(json.dumps(table, indent=2, sort_keys=False) + "\n")
        print(f"wrote {TABLE.relative_to(ROOT)}")
    elif recorded is not None:
        changed = [
            f"{name} {kind}: recorded {old['variants'].get(kind, {}).get('status')}, "
            f"now {new['variants'].get(kind, {}).get('status')}"
            for name, new in models.items()
            if (old := recorded["models"].get(name))
            for kind in VARIANTS
            if old["variants"].get(kind, {}).get("status") != new["variants"].get(kind, {}).get("status")
        ]
        print(
            f"{len(changed)} status(es) differ from {TABLE.relative_to(ROOT)}"
            + (":" if changed else "")
            + "".join(f"\n  {c}" for c in changed)
            + f"\nnot written; `{REWRITE}` records this run"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
