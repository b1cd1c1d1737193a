"""Per-operator kernel times: native onnxruntime's profiler beside onnxruntime-web's, same model and inputs."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from onnxport import runtime
from onnxport.bench.report_types import OperatorRow


def native_operator_times(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int = 5) -> dict[str, float]:
    """{op type: ms per run}, from the profiler's `_kernel_time` events (warm-up excluded)."""
    with tempfile.TemporaryDirectory(prefix="onnxport-profile-") as tmp:
        session = runtime.create_session(
            path, label=path.name, threads=threads, profile_prefix=os.path.join(tmp, "native")
        )
        session.run(None, feeds)  # the warm-up run is the first run in the trace
        for _ in range(runs):
            session.run(None, feeds)
        events = json.loads(Path(session.end_profiling()).read_text())
    kernels = [e for e in events if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")]
    per_run = len(kernels) // (runs + 1) if kernels else 0
    per_op: dict[str, float] = {}
    for event in kernels[per_run:]:  # drop the warm-up run
        op = event.get("args", {}).get("op_name", "?")
        per_op[op] = per_op.get(op, 0.0) + event["dur"] / 1000 / runs
    return per_op


def side_by_side(native: dict[str, float], browser: dict[str, float], top: int = 8) -> list[OperatorRow]:
    ops = sorted(set(native) | set(browser), key=lambda op: -browser.get(op, 0.0))
    return [
        {
            "op": op,
            "native_ms": round(native.get(op, 0.0), 4),
            "browser_ms": round(browser.get(op, 0.0), 4),
            "ratio": round(browser.get(op, 0.0) / native[op], 2) if native.get(op) else None,
        }
        for op in ops[:top]
    ]
