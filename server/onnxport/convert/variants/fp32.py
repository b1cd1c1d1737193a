"""fp32: the checked model as built, the reference every other variant is measured against."""

from __future__ import annotations

import onnx

from onnxport.convert.prepared import Prepared


def make(prepared: Prepared, keep_float: tuple[str, ...]) -> tuple[onnx.ModelProto, dict]:
    return prepared.fp32, {}
