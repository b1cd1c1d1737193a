"""Native onnxruntime `session.run`: the physical reference, with 1 thread and with all cores."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime as ort

from onnxport.bench.timing import measure


def native(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> dict:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return {"threads": threads, **measure(lambda: session.run(None, feeds), runs=runs)}


def all_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
