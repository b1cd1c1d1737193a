"""Make the fp16 and int8 variants of an fp32 model (int8 and int4 weights too): the facade over fp16/ and int8/.

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
    make_int4,
    make_int8_dynamic,
    make_int8_static,
    make_int8_weights,
    nbits,
    require_quantizable,
    weights,
)
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
    "rescue_candidates",
    "rescue_share",
    "operator_histogram",
    "overflowing_nodes",
    "require_quantizable",
]


def operator_histogram(model: onnx.ModelProto) -> dict[str, int]:
    counts = Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in model.graph.node)
    return dict(sorted(counts.items()))


def rescue_candidates(name: str, model: onnx.ModelProto) -> set[str] | None:
    """The nodes a weight-only variant's fallback search may name (those whose weights it stores), or None
    for the other variants (variant_maker picks theirs by operator type)."""
    if name == "int8-weights":
        return weights.candidates(model)
    if name == "int4":
        return nbits.candidates(model)
    return None


def rescue_share(name: str) -> float | None:
    """The share of its candidates a variant's fallback search may keep, when not the search's own (None):
    int4 keeps them in 8-bit blocks rather than in float (convert/int8/nbits.py FALLBACK_SHARE)."""
    return nbits.FALLBACK_SHARE if name == "int4" else None
