"""onnxruntime sessions: one-off ones for the build, a shared pool for the server."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort

from onnxport.errors import ModelFileError

Feeds = dict[str, np.ndarray]


def create_session(model_bytes: bytes, *, threads: int = 0, label: str = "model") -> ort.InferenceSession:
    """A CPU session from serialized model bytes; a load failure names the model."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3  # errors only: warnings about unused initializers are noise here
    try:
        return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises several unrelated types
        raise ModelFileError(f"{label}: onnxruntime {ort.__version__} cannot load it: {_first_line(exc)}") from exc


def run(session: ort.InferenceSession, feeds: Feeds, *, label: str = "model") -> dict[str, np.ndarray]:
    """All outputs by name, for feeds restricted to the session's inputs."""
    wanted = {i.name for i in session.get_inputs()}
    return run_outputs(session, [o.name for o in session.get_outputs()],
                       {k: v for k, v in feeds.items() if k in wanted}, label=label)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class SessionPool:
    """One InferenceSession per artifact (keyed by sha256), created on first use, shared by threads.

    onnxruntime's `run` is thread-safe; creation is serialised per artifact so a
    burst of first requests builds a large model once.
    """

    def __init__(self, providers: list[str], intra_op_threads: int = 0, inter_op_threads: int = 1):
        self.providers = usable_providers(providers)
        self.intra_op_threads = intra_op_threads
        self.inter_op_threads = inter_op_threads
        self._sessions: dict[str, ort.InferenceSession] = {}
        self._creating: dict[str, threading.Lock] = {}
        self._batchers: dict = {}
        self._lock = threading.Lock()

    def get(self, sha256: str, path: Path, label: str) -> ort.InferenceSession:
        session = self._sessions.get(sha256)
        if session is not None:
            return session
        with self._lock:
            creating = self._creating.setdefault(sha256, threading.Lock())
        with creating:
            session = self._sessions.get(sha256)
            if session is None:
                session = self._create(path, label)
                with self._lock:
                    self._sessions[sha256] = session
            return session

    def batcher(self, sha256: str, path: Path, label: str, window_ms: float, max_batch: int):
        """The dynamic batcher of an artifact (one thread per artifact that uses batching)."""
        from onnxport.serving.batching import DynamicBatcher

        key = f"batcher:{sha256}"
        with self._lock:
            existing = self._batchers.get(key)
        if existing is not None:
            return existing
        session = self.get(sha256, path, label)
        with self._lock:
            return self._batchers.setdefault(key, DynamicBatcher(session, label, window_ms, max_batch))

    def retain(self, current: set[str]) -> None:
        """Release sessions of artifacts that the manifest no longer names."""
        with self._lock:
            for sha256 in set(self._sessions) - current:
                del self._sessions[sha256]
                self._creating.pop(sha256, None)
                self._batchers.pop(f"batcher:{sha256}", None)

    def loaded(self) -> list[str]:
        return sorted(self._sessions)

    def _create(self, path: Path, label: str) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.intra_op_threads
        options.inter_op_num_threads = self.inter_op_threads
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(str(path), options, providers=self.providers)
        except Exception as exc:
            raise ModelFileError(f"{label}: onnxruntime {ort.__version__} cannot load it: {_first_line(exc)}") from exc


def usable_providers(wanted: list[str]) -> list[str]:
    """The wanted providers this onnxruntime build has, in order, CPU always last."""
    available = set(ort.get_available_providers())
    chosen = [p for p in wanted if p in available and p != "CPUExecutionProvider"]
    return [*chosen, "CPUExecutionProvider"]


def run_outputs(session: ort.InferenceSession, names: list[str], feeds: Feeds, *, label: str) -> dict[str, np.ndarray]:
    """Chosen outputs by name; a run failure names the model and what onnxruntime said."""
    try:
        return dict(zip(names, session.run(names, feeds)))
    except Exception as exc:
        raise RunError(f"{label}: onnxruntime failed to run it: {_first_line(exc)}") from exc


class RunError(ModelFileError):
    """onnxruntime refused to run a request that passed our checks (values it cannot take)."""
