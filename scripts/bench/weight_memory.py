"""What onnxruntime does with a variant's weights at session creation: its resident memory and warm run
beside fp32's, each variant in a fresh process (so one session's arena does not count for the next).

    .venv/bin/python scripts/bench/weight_memory.py --repository REPO --model minilm [--runs 20]

Prints per served variant: file size, RSS growth over the process before the session (after creation and
after the first run), and the median warm run on the model's first golden input, and each as x fp32.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time, statistics
import numpy as np
from onnxport import runtime

def rss():  # current resident set, kB
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

path, feeds_path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
feeds = dict(np.load(feeds_path))
before = rss()
session = runtime.create_session(open(path, "rb").read(), label="measure")
created = rss()
runtime.run(session, feeds)
first = rss()
times = []
for _ in range(runs):
    t = time.perf_counter(); runtime.run(session, feeds); times.append(time.perf_counter() - t)
print(json.dumps({"created_mb": (created - before) / 1024, "first_run_mb": (first - before) / 1024,
                  "warm_ms": statistics.median(times) * 1000}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    manifest = json.loads((args.repository / "manifest.json").read_text())
    entry = manifest["models"][args.model]
    feeds_file = args.repository / "feeds.npz"
    _golden_feeds(args.repository, entry, feeds_file)
    rows = []
    for name, record in entry["variants"].items():
        if record.get("status") != "ok":
            continue
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(args.repository / record["file"]), str(feeds_file), str(args.runs)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append((name, record["bytes"], json.loads(out.stdout.strip().splitlines()[-1])))
    base = next(r for r in rows if r[0] == "fp32")
    print(
        f"{'variant':<14}{'MB':>8}{'x':>7}{'RSS created MB':>16}{'x':>7}{'after run MB':>14}{'x':>7}"
        f"{'warm ms':>9}{'x':>7}"
    )
    for name, size, m in rows:
        print(
            f"{name:<14}{size / 1e6:>8.1f}{size / base[1]:>7.3f}{m['created_mb']:>16.1f}"
            f"{m['created_mb'] / base[2]['created_mb']:>7.2f}{m['first_run_mb']:>14.1f}"
            f"{m['first_run_mb'] / base[2]['first_run_mb']:>7.2f}{m['warm_ms']:>9.2f}"
            f"{m['warm_ms'] / base[2]['warm_ms']:>7.2f}"
        )


def _golden_feeds(repository: Path, entry: dict, target: Path) -> None:
    """The model's first golden input set, as an .npz the child processes read."""
    import numpy as np

    from onnxport.repository.testdata import read_golden

    inputs, _ = read_golden(repository, entry)[0]
    np.savez(target, **inputs)


if __name__ == "__main__":
    main()
