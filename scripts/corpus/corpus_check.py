"""Does `onnxport check` agree with `onnxport import` on the third-party corpus? One table says.

For each test directory in tests/data/third-party/ (`make testdata`):

1. `onnxport import DIR --name NAME --task TASK --forms none --quiet` into its own repository (two at a
   time; a subprocess each, the command a user runs);
2. `onnxport check --runtimes wasm` on that repository: Chromium runs every served variant in
   WebAssembly and judges it by the one rule (docs/guide/check.md): an fp32 file element-wise against
   the server's run of it, an fp16 or int8 file by its task metric against fp32, within its budget;
3. for every variant the import serves, the import's verdict (its task metric against fp32 on every
   golden set) beside the check's (the browser's, on golden set 0), and whether they agree.

Prints the table (also written to /tmp/corpus_check.md) and the agreement count; exits 1 when a
served variant's check verdict is not `pass`.

    .venv/bin/python scripts/corpus/corpus_check.py [NAME ...] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "testdata"))  # each model's task is its fetcher's, which says why

from fetch_third_party import TASKS  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "third-party"
MARKDOWN = Path(tempfile.gettempdir()) / "corpus_check.md"
VARIANTS = ("fp32", "fp16", "int8-dynamic", "int8-static")
# The figure each task's budget reads (accuracy/budgets.py), in the order it is looked for.
METRICS = ("top1_agreement", "cosine_min", "step_agreement", "scaled_mean_abs", "scaled_max_abs")


def onnxport(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxport", *args], capture_output=True, text=True)


def import_one(name: str, repository: Path) -> str | None:
    done = onnxport(
        "--repository",
        str(repository),
        "import",
        str(CORPUS / name),
        "--name",
        name,
        "--task",
        TASKS.get(name, "generic"),
        "--forms",
        "none",
        "--quiet",
    )
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["failed"])[-1]


def check_one(repository: Path) -> list[dict]:
    report = repository / "check.json"
    done = onnxport("--repository", str(repository), "check", "--runtimes", "wasm", "--json", str(report))
    if not report.is_file():
        raise SystemExit(f"onnxport check on {repository} wrote no report:\n{done.stderr}")
    return json.loads(report.read_text())["results"]


def figure(metric: dict | None, task: str) -> str:
    metric = metric or {}
    wanted = {
        "classification": "top1_agreement",
        "embedding": "cosine_min",
        "sequence": "step_agreement",
        "detection-map": "scaled_mean_abs",
    }.get(task)
    key = wanted if wanted in metric else next((k for k in METRICS if k in metric), None)
    return f"{key.replace('_', ' ')} {metric[key]:.4g}" if key else "-"


def import_cell(record: dict, task: str) -> str:
    metric = figure(record.get("vs_fp32", {}).get("metric"), task)
    return f"{record['status']} ({record.get('arithmetic', '?')}; {metric})"


def check_cell(row: dict | None, task: str) -> str:
    if row is None:
        return "not run"
    if row.get("basis") == "budget":
        judged = figure(row.get("metric_vs_fp32"), task)
    elif row.get("outputs"):
        worst = max((o.get("max_abs", 0.0) for o in row["outputs"].values()), default=0.0)
        judged = f"max abs {worst:.3g} vs the server's fp32"
    else:
        judged = row.get("reason") or "-"
    return f"{row['status']} ({row.get('basis', '?')}; {judged})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the repositories here (default: a temp dir)")
    args = parser.parse_args(argv)
    names = args.names or sorted(p.parent.name for p in CORPUS.glob("*/model.onnx"))
    if not names:
        raise SystemExit(f"no corpus in {CORPUS}: run `make testdata`")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="corpus-check-"))
    with ThreadPoolExecutor(2) as pool:
        failed = dict(zip(names, pool.map(lambda n: import_one(n, workdir / n), names)))
    lines = [
        "| model | variant | import (arithmetic; metric vs fp32) | check on wasm (basis; figure) | agree |",
        "|---|---|---|---|---|",
    ]
    agree = total = 0
    for name in names:
        if failed[name]:
            lines.append(f"| {name} | - | import failed: {failed[name]} | - | - |")
            continue
        entry = json.loads((workdir / name / "manifest.json").read_text())["models"][name]
        rows = {r["variant"]: r for r in check_one(workdir / name) if r["runtime"] == "wasm" and not r.get("form")}
        for variant in VARIANTS:
            record = entry["variants"].get(variant)
            if not record or record.get("status") != "ok":
                continue
            row = rows.get(variant)
            same = row is not None and row["status"] == "pass"
            agree, total = agree + same, total + 1
            lines.append(
                f"| {name} | {variant} | {import_cell(record, entry['task'])} | "
                f"{check_cell(row, entry['task'])} | {'yes' if same else '**no**'} |"
            )
        print(f"... {name} checked", file=sys.stderr, flush=True)
    table = "\n".join(lines) + f"\n\n{agree} of {total} served variants: the check agrees with the import.\n"
    MARKDOWN.write_text(table)
    print(table)
    print(f"wrote {MARKDOWN}; repositories in {workdir}", file=sys.stderr)
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
