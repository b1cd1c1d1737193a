"""Dynamic batching in a Ray Serve replica, by Ray's own @serve.batch.

The same verdict (batching_policy: where the bench measured a gain) and the same grouping and
join/split (batching.by_key, run_group) as the waitress server's DynamicBatcher; Ray's queue
decides when a batch is full (max_batch requests) or its window is over. The V2 work runs in
Starlette's thread pool, so a request enters the replica's event loop to join a batch, and the
batch runs in a thread so that the loop keeps accepting requests meanwhile.
"""

from __future__ import annotations

import asyncio
from typing import Callable

import numpy as np

from onnxport import runtime
from onnxport.serving.models.batching import Pending, by_key, run_group


class ServeBatcher:
    def __init__(self, session, label: str, window_ms: float, max_batch: int, loop: asyncio.AbstractEventLoop):
        from ray import serve

        self.session = session
        self.label = label
        self.loop = loop
        self._closed = False

        # One queue per artifact: @serve.batch keeps one per decorated function, so each batcher decorates its own.
        @serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=window_ms / 1000)
        async def run_batch(items: list[Pending]) -> list[Pending]:
            for group in by_key(items):
                await asyncio.to_thread(run_group, self.session, self.label, group)
            return items

        self._run_batch = run_batch

    def run(
        self, names: list[str], feeds: dict[str, np.ndarray], answered: Callable[[Pending], None] | None = None
    ) -> dict[str, np.ndarray]:
        """answered, as for batching.DynamicBatcher.run: hears the request's wait for its batch (from here to
        the batch's start: the hop into the loop and Ray's queue) and the batch it ran in."""
        if self._closed:  # released by the pool (a new build) while this request was on its way
            return runtime.run_outputs(self.session, list(names), feeds, label=self.label, options=runtime.shrinking())
        pending = Pending(tuple(names), feeds)
        asyncio.run_coroutine_threadsafe(self._run_batch(pending), self.loop).result()
        if answered is not None:
            answered(pending)
        return pending.outcome()

    def close(self) -> None:
        self._closed = True

    def running(self) -> bool:
        return not self._closed


def serve_batcher(loop: Callable[[], asyncio.AbstractEventLoop]) -> Callable[..., ServeBatcher]:
    """A SessionPool batcher factory for a replica whose event loop is loop() (known once it serves)."""
    return lambda session, label, window_ms, max_batch: ServeBatcher(session, label, window_ms, max_batch, loop())
