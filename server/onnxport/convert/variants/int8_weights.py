"""int8-weights: every large float weight stored as int8 behind a DequantizeLinear; the arithmetic stays float
(convert/int8/weights.py)."""

from __future__ import annotations

import onnx

from onnxport.convert.int8 import weights
from onnxport.convert.prepared import Prepared
from onnxport.repository.variant_record import Settings


def make(prepared: Prepared, keep_float: tuple[str, ...]) -> tuple[onnx.ModelProto, Settings]:
    return weights.make_int8_weights(prepared.fp32, keep_float)


def candidates(model: onnx.ModelProto) -> set[str]:
    return weights.candidates(model)
