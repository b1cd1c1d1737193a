"""Dynamic batching: requests for one artifact that arrive within a short window run as one batch.

Their inputs are concatenated along the batch axis (axis 0), run once, and the
outputs split back. Only requests whose other dimensions and dtypes agree are
joined (minilm requests of different sequence lengths run in separate groups).
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from onnxport import runtime

# Queued by close(): the batcher's thread stops when it reaches it.
_STOP = None


@dataclass
class Execution:
    """One run of a joined batch (Triton's batch_stats): its rows, and nanoseconds spent joining the
    inputs, in onnxruntime, and splitting the outputs."""

    rows: int
    input_ns: int = 0
    infer_ns: int = 0
    output_ns: int = 0


@dataclass
class Pending:
    names: tuple[str, ...]
    feeds: dict[str, np.ndarray]
    done: threading.Event = field(default_factory=threading.Event)
    result: dict[str, np.ndarray] | None = None
    error: BaseException | None = None
    queued: int = field(default_factory=time.perf_counter_ns)
    started: int = 0  # perf_counter_ns when its batch started to run (run_group)
    execution: Execution | None = None  # set on the first request of each batch that ran: one per execution

    def waited(self) -> int:
        """Nanoseconds between being handed in and its batch starting to run."""
        return max(0, self.started - self.queued) if self.started else 0

    def key(self) -> tuple:
        return self.names, tuple((k, v.dtype.str, v.shape[1:]) for k, v in sorted(self.feeds.items()))

    def rows(self) -> int:
        return next(iter(self.feeds.values())).shape[0]

    def outcome(self) -> dict[str, np.ndarray]:
        """The outputs once answered, or the batch's error raised in the caller's thread."""
        if self.error is not None:
            raise self.error
        if self.result is None:
            raise RuntimeError("a batched request was answered with neither outputs nor an error")
        return self.result


class DynamicBatcher:
    def __init__(self, session, label: str, window_ms: float, max_batch: int):
        self.session = session
        self.label = label
        self.window = window_ms / 1000
        self.max_batch = max_batch
        self._queue: queue.Queue[Pending | None] = queue.Queue()
        self._in_flight = 0  # requests handed in and not yet answered
        self._count_lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=f"batcher {label}", daemon=True)
        self._thread.start()

    def run(
        self, names: list[str], feeds: dict[str, np.ndarray], answered: Callable[[Pending], None] | None = None
    ) -> dict[str, np.ndarray]:
        """answered, if given, hears the request once its batch ran (its wait, its batch's Execution), in
        the caller's thread, so a request's statistics tell queue time apart from the run."""
        pending = Pending(tuple(names), feeds)
        with self._count_lock:
            closed = self._closed
            if not closed:
                self._in_flight += 1
                self._queue.put(pending)  # under the lock, so nothing is queued after the stop
        if closed:  # released by the pool while this request was on its way: run it alone
            return runtime.run_outputs(self.session, list(names), feeds, label=self.label, options=runtime.shrinking())
        try:
            pending.done.wait()
        finally:
            with self._count_lock:
                self._in_flight -= 1
        if answered is not None:
            answered(pending)
        return pending.outcome()

    def close(self) -> None:
        """Answer what is queued, then stop the thread (which then holds no session)."""
        with self._count_lock:
            self._closed = True
            self._queue.put(_STOP)

    def running(self) -> bool:
        return self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch = [first]
            rows = first.rows()
            deadline = time.perf_counter() + self.window
            # A lone request runs at once; the window is only worth waiting when others are in flight.
            while rows < self.max_batch and len(batch) < self._in_flight:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                try:
                    item = self._queue.get(timeout=left)
                except queue.Empty:
                    break
                if item is _STOP:
                    self._queue.put(_STOP)  # stop after this batch
                    break
                batch.append(item)
                rows += item.rows()
            for group in by_key(batch):
                run_group(self.session, self.label, group)


def by_key(batch: list[Pending]) -> list[list[Pending]]:
    """The requests of a batch that can be joined, in arrival order."""
    groups: dict[tuple, list[Pending]] = {}
    for item in batch:
        groups.setdefault(item.key(), []).append(item)
    return list(groups.values())


def run_group(session, label: str, group: list[Pending]) -> None:
    """Run requests that agree on outputs, dtypes and non-batch dims as one batch; each hears its rows."""
    start_ns = time.perf_counter_ns()
    for item in group:
        item.started = item.started or start_ns  # a request run again alone (below) waited until the first try
    execution = Execution(sum(item.rows() for item in group))
    try:
        names = list(group[0].names)
        if len(group) == 1:
            group[0].result = runtime.run_outputs(
                session, names, group[0].feeds, label=label, options=runtime.shrinking()
            )
            execution.infer_ns = time.perf_counter_ns() - start_ns
            group[0].execution = execution
        else:
            joined = {k: np.concatenate([g.feeds[k] for g in group]) for k in group[0].feeds}
            joined_ns = time.perf_counter_ns()
            try:
                outputs = runtime.run_outputs(session, names, joined, label=label, options=runtime.shrinking())
            except runtime.RunError as exc:
                if not exc.invalid_argument:
                    raise
                # One request's values (a token id past the vocabulary) must not fail its
                # neighbours: each runs alone, and only the culprit hears of it.
                for item in group:
                    run_group(session, label, [item])
                return
            ran_ns = time.perf_counter_ns()
            start = 0
            for item in group:
                stop = start + item.rows()
                item.result = {k: v[start:stop] for k, v in outputs.items()}
                start = stop
            execution.input_ns, execution.infer_ns = joined_ns - start_ns, ran_ns - joined_ns
            execution.output_ns = time.perf_counter_ns() - ran_ns
            group[0].execution = execution
    except BaseException as exc:  # every waiting request hears about the failure
        for item in group:
            item.error = exc
    finally:
        for item in group:
            item.done.set()
