"""Make the fp16 and int8 variants of an fp32 model (int8 and int4 weights too): the facade over fp16/, int8/
and variants/int4.py, for what converts a model outside a build (forms, tests).

Each function takes the checked fp32 model and returns the variant's model,
or raises VariantSkipped when the variant would be the fp32 model again.
"""

from __future__ import annotations

from collections import Counter

import onnx

from onnxport.convert.fp16 import make_fp16
from onnxport.convert.fp16.overflow import overflowing_nodes
from onnxport.convert.fp16.rules import FP16_MAX
from onnxport.convert.int8 import (
    gemm_to_matmul,
    make_int8_dynamic,
    make_int8_static,
    make_int8_weights,
    require_quantizable,
)
from onnxport.convert.variants.int4 import make_int4
from onnxport.errors import VariantSkipped

__all__ = [
    "FP16_MAX",
    "VariantSkipped",
    "gemm_to_matmul",
    "make_fp16",
    "make_int4",
    "make_int8_dynamic",
    "make_int8_static",
    "make_int8_weights",
    "operator_histogram",
    "overflowing_nodes",
    "require_quantizable",
]


def operator_histogram(model: onnx.ModelProto) -> dict[str, int]:
    counts = Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in model.graph.node)
    return dict(sorted(counts.items()))
