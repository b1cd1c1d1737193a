"""`onnxport bench --engine ray`: the server throughput table again, on Ray Serve with 1, 2, ... replicas.

The same requests and clients as the waitress rows of the same run (bench_run.py), each row about as
long (v2_client.throughput_table), so the rows compare. Each replica count gets a fresh local cluster,
with dynamic batching off and on (on Ray it is Ray's @serve.batch); its start time is part of the report.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np

from onnxport.bench.report_types import RayRow, RayRun, RayStart
from onnxport.bench.v2_client import throughput_table
from onnxport.harness.process import running_server

RAY_START_TIMEOUT = 240
RAY_STOP_TIMEOUT = 60  # serve.shutdown and ray.shutdown, after SIGTERM


def ray_rows(
    repository: Path,
    names: list[str],
    inputs: dict[str, dict[str, np.ndarray]],
    clients: tuple[int, ...],
    first_rate: Callable[[str], float],
    replica_counts: list[int],
    say: Callable[[str], None],
) -> RayRun:
    """{model: [{"engine": "ray", "replicas": n, "batching": "off"|"on", "throughput": [...]}]}, plus start times."""
    rows: dict[str, list[RayRow]] = {name: [] for name in names}
    starts: list[RayStart] = []
    for replicas in replica_counts:
        for batching in ("none", "all"):
            began = time.perf_counter()
            with running_server(
                repository,
                extra_env={"ONNXPORT_DYNAMIC_BATCHING": batching},
                timeout=RAY_START_TIMEOUT,
                serve_args=["--engine", "ray", "--replicas", str(replicas)],
                stop_timeout=RAY_STOP_TIMEOUT,
            ) as base:
                starts.append({"replicas": replicas, "seconds": round(time.perf_counter() - began, 1)})
                for name in names:
                    say(f"Ray Serve, {replicas} replica(s), batching {'on' if batching == 'all' else 'off'}: {name}")
                    path = f"/v2/models/{name}/versions/fp32/infer"
                    rows[name].append(
                        {
                            "engine": "ray",
                            "replicas": replicas,
                            "batching": "on" if batching == "all" else "off",
                            "throughput": throughput_table(base, path, inputs[name], clients, first_rate(name)),
                        }
                    )
    return {"rows": rows, "starts": starts}
