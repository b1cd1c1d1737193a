"""The server's sessions: one per artifact, created on first use and shared by threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

import onnxruntime as ort

from onnxport import runtime
from onnxport.serving.models.batching import DynamicBatcher


class SessionPool:
    """One InferenceSession per artifact (keyed by sha256), plus its dynamic batcher when used.

    onnxruntime's `run` is thread-safe; creation is serialised per artifact so a
    burst of first requests builds a large model once.
    """

    def __init__(
        self,
        providers: list[str],
        intra_op_threads: int = 0,
        inter_op_threads: int = 1,
        batcher: Callable[..., DynamicBatcher] = DynamicBatcher,
        spinning: bool = True,
    ):
        self.spinning = spinning
        # batcher(session, label, window_ms, max_batch): ours, or Ray Serve's in a Ray replica (ray/batching.py).
        self.make_batcher = batcher
        self.providers = runtime.usable_providers(providers)
        self.intra_op_threads = intra_op_threads
        self.inter_op_threads = inter_op_threads
        self._sessions: dict[str, ort.InferenceSession] = {}
        self._creating: dict[str, threading.Lock] = {}
        self._batchers: dict[str, DynamicBatcher] = {}
        self._lock = threading.Lock()
        # on_load(seconds, sessions held) hears each session created (the app's metrics, serving/statistics.py).
        self.on_load: Callable[[float, int], None] | None = None

    def session_settings(self) -> runtime.SessionSettings:
        """How this pool's sessions run, for the server's other sessions (generation's decoders)."""
        return runtime.SessionSettings(
            self.intra_op_threads, self.inter_op_threads, tuple(self.providers), self.spinning
        )

    def get(self, sha256: str, path: Path, label: str) -> ort.InferenceSession:
        session = self._sessions.get(sha256)
        if session is not None:
            return session
        with self._lock:
            creating = self._creating.setdefault(sha256, threading.Lock())
        with creating:
            session = self._sessions.get(sha256)
            if session is None:
                started = time.perf_counter()
                session = runtime.serving_session(path, self.session_settings(), label=label)
                with self._lock:
                    self._sessions[sha256] = session
                    held = len(self._sessions)
                if self.on_load is not None:
                    self.on_load(time.perf_counter() - started, held)
            return session

    def batcher(self, sha256: str, path: Path, label: str, window_ms: float, max_batch: int) -> DynamicBatcher:
        """The dynamic batcher of an artifact (one thread per artifact that uses batching)."""
        with self._lock:
            existing = self._batchers.get(sha256)
        if existing is not None:
            return existing
        session = self.get(sha256, path, label)
        with self._lock:
            if sha256 not in self._batchers:
                self._batchers[sha256] = self.make_batcher(session, label, window_ms, max_batch)
            return self._batchers[sha256]

    def retain(self, current: set[str]) -> None:
        """Release the sessions and stop the batchers of artifacts the manifest no longer names."""
        with self._lock:
            gone = (set(self._sessions) | set(self._batchers)) - current
        self.release(gone)

    def release(self, sha256s: set[str]) -> None:
        """Drop these artifacts' sessions and stop their batchers (the repository API's unload). Requests
        already running keep their reference to the session; the next one creates it again."""
        with self._lock:
            for sha256 in sha256s & set(self._sessions):
                del self._sessions[sha256]
                self._creating.pop(sha256, None)
            stopped = [self._batchers.pop(sha256) for sha256 in sha256s & set(self._batchers)]
        for batcher in stopped:
            batcher.close()  # its thread ends after the requests already queued, and lets the session go

    def loaded(self) -> list[str]:
        return sorted(self._sessions)

    def batching(self) -> list[str]:
        """sha256 of the artifacts whose batcher thread is running."""
        with self._lock:
            return sorted(sha for sha, b in self._batchers.items() if b.running())
