"""int8-static: QDQ int8 with every activation's range fixed from real calibration inputs (convert/int8/)."""

from __future__ import annotations

import onnx

from onnxport.convert.graph import copy_model
from onnxport.convert.int8 import make_int8_static, require_quantizable
from onnxport.convert.prepared import Prepared
from onnxport.repository.variant_record import Settings


def make(prepared: Prepared, keep_float: tuple[str, ...]) -> tuple[onnx.ModelProto, Settings]:
    # A recipe's own list (minilm) first; the fallback search adds to it.
    return make_int8_static(
        copy_model(prepared.fp32), prepared.calibration, (*prepared.int8_static_keep_float, *keep_float)
    )


def require_work(model: onnx.ModelProto) -> None:
    """Raises VariantSkipped when static int8 has nothing to quantize, whatever calibration data is given."""
    require_quantizable(model, "static")
