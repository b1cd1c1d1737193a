"""int8-dynamic: int8 weights ahead, each run's activations quantized as it runs (convert/int8/)."""

from __future__ import annotations

import onnx

from onnxport.convert.graph import copy_model
from onnxport.convert.int8 import make_int8_dynamic
from onnxport.convert.prepared import Prepared
from onnxport.repository.variant_record import Settings


def make(prepared: Prepared, keep_float: tuple[str, ...]) -> tuple[onnx.ModelProto, Settings]:
    return make_int8_dynamic(copy_model(prepared.fp32), keep_float)
