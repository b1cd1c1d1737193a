"""Tensors as JSON: {name: {dtype, shape, data: base64 of the little-endian bytes}}.

The one format between the server's golden-data endpoint, the page
(web/tensors.js decodes and encodes it) and `onnxport check` / `bench`.
"""

from __future__ import annotations

import base64

import numpy as np


def encode(tensors: dict[str, np.ndarray]) -> dict[str, dict]:
    return {
        name: {"dtype": value.dtype.name, "shape": list(value.shape),
               "data": base64.b64encode(
                   np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()).decode()}
        for name, value in tensors.items()
    }


def decode(encoded: dict[str, dict]) -> dict[str, np.ndarray]:
    return {
        name: np.frombuffer(base64.b64decode(t["data"]),
                            dtype=np.dtype(t["dtype"]).newbyteorder("<")).reshape(t["shape"])
        for name, t in encoded.items()
    }
