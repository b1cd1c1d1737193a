"""What the server counts about its inference requests, recorded in one place for two readers:
Prometheus (`GET /metrics`, a per-app CollectorRegistry) and Triton's statistics extension
(`GET /v2/models/.../stats`, counts and nanoseconds per model and version).

create_app builds one Recorder per app: nothing is registered at import time, so tests can build
many apps and each one's counters start at zero.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from onnxport.json_boundary import JsonObject

if TYPE_CHECKING:
    from onnxport.serving.models.batching import Execution, Pending

# A request for a model or version the catalog does not serve is counted under this label, so a client
# asking for random names cannot grow the number of series without bound.
UNKNOWN = "_unknown"
PHASES = ("queue", "compute_input", "compute_infer", "compute_output")
# Seconds: from a sub-millisecond iris call to a multi-second large-batch request.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# Rows per batch the dynamic batcher ran: max_batch is 32 by default, a single request may bring more.
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024)


@dataclass
class Duration:
    count: int = 0
    ns: int = 0

    def add(self, ns: int) -> None:
        self.count += 1
        self.ns += ns

    def as_json(self) -> dict[str, int]:
        return {"count": self.count, "ns": self.ns}


@dataclass
class ModelStats:
    """Triton's InferStatistics of one model version (cache_* stay zero: there is no response cache)."""

    last_inference: int = 0  # ms since the epoch
    inference_count: int = 0  # batch rows inferred
    execution_count: int = 0
    durations: dict[str, Duration] = field(
        default_factory=lambda: {k: Duration() for k in ("success", "fail", *PHASES, "cache_hit", "cache_miss")}
    )
    # Triton's batch_stats: per batch size executed, the compute phases of those executions.
    batches: dict[int, dict[str, Duration]] = field(default_factory=dict)

    def executed(self, rows: int, input_ns: int, infer_ns: int, output_ns: int) -> None:
        self.execution_count += 1
        phases = self.batches.setdefault(rows, {k: Duration() for k in PHASES[1:]})
        for phase, ns in zip(PHASES[1:], (input_ns, infer_ns, output_ns)):
            phases[phase].add(ns)


@dataclass
class Timing:
    """One request's phases, filled in by v2/core.py's infer as it goes (nanoseconds, perf_counter_ns)."""

    start: int = field(default_factory=time.perf_counter_ns)
    phases: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    batched: bool = False  # answered by the dynamic batcher
    execution: Execution | None = None  # the batch this request's run led (batching.Pending.execution)
    _mark: int = 0

    def __post_init__(self) -> None:
        self._mark = self.start

    def phase(self, name: str) -> None:
        """The time since the previous mark belongs to phase `name`."""
        now = time.perf_counter_ns()
        self.phases[name] = self.phases.get(name, 0) + now - self._mark
        self._mark = now

    def set_aside(self, name: str, ns: int) -> None:
        """ns of the time since the previous mark belong to phase `name`, not to the next phase marked."""
        self.phases[name] = self.phases.get(name, 0) + ns
        self._mark += ns

    def heard_batcher(self, pending: Pending) -> None:
        """batching.DynamicBatcher.run's `answered`: the wait for the batch is the request's queue time."""
        self.set_aside("queue", pending.waited())
        self.batched = True
        self.execution = pending.execution


class Recorder:
    def __init__(self, sessions_held: Callable[[], int]) -> None:
        """sessions_held: how many sessions the pool holds now (read at each scrape: unload and reload drop some)."""
        self.registry = CollectorRegistry()
        r = self.registry
        labels = ["model", "version"]
        self.requests = Counter(
            "onnxport_inference_requests", "Inference requests answered", [*labels, "protocol", "status"], registry=r
        )
        self.queue = Histogram(
            "onnxport_inference_queue_seconds",
            "Time waiting for the dynamic batcher",
            labels,
            buckets=BUCKETS,
            registry=r,
        )
        self.inference = Histogram(
            "onnxport_inference_compute_seconds",
            "Time running the request (its batch, when batched), without the queue",
            labels,
            buckets=BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram(
            "onnxport_inference_batch_size",
            "Rows per batch the dynamic batcher ran",
            labels,
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.total = Histogram(
            "onnxport_inference_request_seconds",
            "Whole inference requests, read to answered",
            labels,
            buckets=BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge("onnxport_inference_requests_in_flight", "Inference requests being handled", registry=r)
        self.session_load = Histogram(
            "onnxport_session_load_seconds", "onnxruntime session creation", buckets=BUCKETS, registry=r
        )
        self.sessions = Gauge("onnxport_sessions_loaded", "onnxruntime sessions held", registry=r)
        self.sessions.set_function(sessions_held)
        ProcessCollector(registry=r)  # process_resident_memory_bytes, cpu seconds, open fds (Linux)
        self._lock = threading.Lock()
        self._stats: dict[tuple[str, str], ModelStats] = {}

    def session_loaded(self, seconds: float, held: int) -> None:
        self.session_load.observe(seconds)

    def record(self, model: str, version: str, binary: bool, status: int, timing: Timing, known: bool) -> None:
        """One answered request; `known`: the model and version are served (else only the counter hears it)."""
        total = time.perf_counter_ns() - timing.start
        if not known:
            model, version = UNKNOWN, UNKNOWN
        self.requests.labels(model, version, "binary" if binary else "json", f"{status // 100}xx").inc()
        if not known:
            return
        self.total.labels(model, version).observe(total / 1e9)
        if status < 300:
            self.queue.labels(model, version).observe(timing.phases.get("queue", 0) / 1e9)
            self.inference.labels(model, version).observe(timing.phases.get("compute_infer", 0) / 1e9)
            if timing.execution is not None:  # one observation per batch run, by the request that led it
                self.batch_size.labels(model, version).observe(timing.execution.rows)
        with self._lock:
            stats = self._stats.setdefault((model, version), ModelStats())
            if status >= 300:
                stats.durations["fail"].add(total)
                return
            stats.durations["success"].add(total)
            for phase in PHASES:
                stats.durations[phase].add(timing.phases.get(phase, 0))
            stats.inference_count += timing.rows
            # An execution is a run of onnxruntime: a request alone, or a whole batch (counted once).
            if timing.execution is not None:
                run = timing.execution
                stats.executed(run.rows, run.input_ns, run.infer_ns, run.output_ns)
            elif not timing.batched:
                stats.executed(timing.rows, *(timing.phases.get(phase, 0) for phase in PHASES[1:]))
            stats.last_inference = time.time_ns() // 1_000_000

    def model_stats(self, versions: list[tuple[str, str]]) -> list[JsonObject]:
        """Triton's model_stats entries for these (model, version) pairs, zeros for ones never called."""
        with self._lock:
            found = [(m, v, self._stats.get((m, v)) or ModelStats()) for m, v in versions]
            return [
                {
                    "name": model,
                    "version": version,
                    "last_inference": s.last_inference,
                    "inference_count": s.inference_count,
                    "execution_count": s.execution_count,
                    "inference_stats": {k: d.as_json() for k, d in s.durations.items()},
                    "batch_stats": [
                        {"batch_size": size, **{k: d.as_json() for k, d in phases.items()}}
                        for size, phases in sorted(s.batches.items())
                    ],
                    "memory_usage": [],
                }
                for model, version, s in found
            ]
