"""Tensors as JSON: {name: {dtype, shape, data: base64 of the little-endian bytes}}; string tensors (dtype
object) carry a list of texts as their data.

The one format between the server's golden-data endpoint, the page
(web/lib/tensors/tensors.js decodes and encodes it) and `onnxport check` / `bench`.
"""

from __future__ import annotations

import base64
from typing import Any, Mapping

import numpy as np


def encode(tensors: dict[str, np.ndarray]) -> dict[str, dict]:
    return {
        name: {"dtype": value.dtype.name, "shape": list(value.shape), "data": _data(value)}
        for name, value in tensors.items()
    }


def _data(value: np.ndarray) -> str | list[str]:
    if value.dtype.kind in "OSU":
        # Strings as a list of texts: the bytes of an object array are pointers into this process's memory.
        return [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v) for v in value.reshape(-1)]
    return base64.b64encode(np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()).decode()


def decode(encoded: Mapping[str, Mapping[str, Any]]) -> dict[str, np.ndarray]:
    return {name: _array(t) for name, t in encoded.items()}


def _array(t: Mapping[str, Any]) -> np.ndarray:
    if isinstance(t["data"], list):
        return np.array(t["data"], dtype=object).reshape(t["shape"])
    return np.frombuffer(base64.b64decode(t["data"]), dtype=np.dtype(t["dtype"]).newbyteorder("<")).reshape(t["shape"])
