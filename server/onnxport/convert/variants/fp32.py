"""fp32: the checked model as built, the reference every other variant is measured against."""

from __future__ import annotations

import onnx

from onnxport.convert.prepared import Prepared
from onnxport.repository.variant_record import Settings


def make(prepared: Prepared, keep_float: tuple[str, ...]) -> tuple[onnx.ModelProto, Settings]:
    return prepared.fp32, {}
