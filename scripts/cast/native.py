"""The Cast probe in native onnxruntime (Python, 1 thread), same models and feeds as browser.py (docs/cast.md).

    .venv/bin/python scripts/cast/native.py [--out /tmp/onnxport-cast] [--runs 30] [--profile-runs 10] \
        [--groups tiny,minilm]

Writes <out>/native.json and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import variants

from browser import GROUPS


def session(path: Path, profile_prefix: str | None = None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser()
    common.timing_arguments(parser)
    args = parser.parse_args()
    out = Path(args.out)
    groups = [g for g in args.groups.split(",") if g]
    built = variants.build(out, "all" if "minilm" in groups else "tiny")
    result = {"onnxruntime": ort.__version__, "profiles": {}, "times": {}}
    for group in groups:
        names = [n for n in GROUPS[group] if not args.only or n in args.only.split(",")]
        if not names:
            continue
        for name in names:
            feeds = built[name]["feeds"]
            with tempfile.TemporaryDirectory(prefix="onnxport-cast-") as tmp:
                s = session(built[name]["path"], f"{tmp}/native")
                for _ in range(1 + args.profile_runs):
                    s.run(None, feeds)
                events = json.loads(Path(s.end_profiling()).read_text())
            runs = common.per_run(events)
            warm = runs[1:]
            casts = sorted({n for r in runs for n, k in r["kernels"].items() if k["op"] == "Cast"})
            entry = {
                "warm_op_ms": common.warm_op_times(warm),
                "warm_median": {
                    "model_run_ms": common.median([r["model_run_ms"] for r in warm]),
                    "kernels_ms": common.median([sum(k["ms"] for k in r["kernels"].values()) for r in warm]),
                    **{c: {"ms": common.median([r["kernels"][c]["ms"] for r in warm if c in r["kernels"]])}
                       for c in casts},
                },
            }
            result["profiles"][name] = entry
            print("profile", name, json.dumps(entry), flush=True)
        sessions = {name: session(built[name]["path"]) for name in names}
        times = {name: [] for name in names}
        for r in range(args.warmup + args.runs):
            for name in names:
                t0 = time.perf_counter()
                sessions[name].run(None, built[name]["feeds"])
                if r >= args.warmup:
                    times[name].append((time.perf_counter() - t0) * 1000)
        if "minilm" in sessions:  # the variants compute the same embedding
            ref = sessions["minilm"].run(None, built["minilm"]["feeds"])[0]
            for name in names:
                diff = float(abs(sessions[name].run(None, built[name]["feeds"])[0] - ref).max())
                result.setdefault("max_abs_diff_vs_minilm", {})[name] = diff
                print("max |diff| vs minilm", name, diff)
        for name, ms in times.items():
            result["times"][name] = {"median_ms": common.median(ms), "p10_p90_ms": common.p10_p90(ms), "n": len(ms)}
            print("time", name, result["times"][name], flush=True)
    (out / "native.json").write_text(json.dumps(result, indent=1))
    print("wrote", out / "native.json")


if __name__ == "__main__":
    main()
