"""Make the fp16 and int8 variants of an fp32 model: the facade over fp16/ and int8/.

Each function takes the checked fp32 model and returns the variant's model,
or raises VariantSkipped when the variant would be the fp32 model again.
"""

from __future__ import annotations

from collections import Counter

import onnx

from onnxport.convert.fp16 import make_fp16
from onnxport.convert.fp16.overflow import overflowing_nodes
from onnxport.convert.fp16.rules import FP16_MAX
from onnxport.convert.int8 import gemm_to_matmul, make_int8_dynamic, make_int8_static, require_quantizable
from onnxport.errors import VariantSkipped

__all__ = ["FP16_MAX", "VariantSkipped", "gemm_to_matmul", "make_fp16", "make_int8_dynamic", "make_int8_static",
           "operator_histogram", "overflowing_nodes", "require_quantizable"]


def operator_histogram(model: onnx.ModelProto) -> dict[str, int]:
    counts = Counter(
        n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in model.graph.node
    )
    return dict(sorted(counts.items()))
