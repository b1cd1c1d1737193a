"""onnxruntime sessions for build-time measurement (and, later, for serving)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort

from .errors import ModelFileError

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
    names = [o.name for o in session.get_outputs()]
    wanted = {i.name for i in session.get_inputs()}
    try:
        values = session.run(names, {k: v for k, v in feeds.items() if k in wanted})
    except Exception as exc:
        raise ModelFileError(f"{label}: onnxruntime failed to run it: {_first_line(exc)}") from exc
    return dict(zip(names, values))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
