"""fp16: weights and activations in 16-bit floats, inputs and outputs in fp32 (convert/fp16/)."""

from __future__ import annotations

import onnx

from onnxport.convert.fp16 import make_fp16
from onnxport.convert.prepared import Prepared
from onnxport.repository.variant_record import Settings


def make(prepared: Prepared, keep_float: tuple[str, ...]) -> tuple[onnx.ModelProto, Settings]:
    # Values past fp16's range are looked for on every input the build has, calibration's too.
    return make_fp16(prepared.fp32, [*prepared.golden_inputs, *prepared.calibration], keep_float)
