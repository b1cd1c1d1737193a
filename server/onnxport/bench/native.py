"""Native onnxruntime `session.run`: the physical reference, with 1 thread and with all cores."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from onnxport import runtime
from onnxport.bench.report_types import NativeTiming
from onnxport.bench.timing import measure


def native(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> NativeTiming:
    session = runtime.create_session(path, label=path.name, threads=threads, inter_op_threads=1)
    return {"threads": threads, **measure(lambda: session.run(None, feeds), runs=runs)}


def all_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
