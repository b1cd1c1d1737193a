"""What a model file computes, read off its graph (and every subgraph): the arithmetic that decides
which budget a variant is judged by, and the operator types a runtime must have kernels for.

A variant's name says what the build meant to make; the file says what it is. An already-int8 model
imported as "the fp32 model" is int8, and its fp16 "conversion" too (the quantized islands stay as
they are). So the budget comes from `arithmetic(model)`, never from the variant's name, and the same
graph gets the same verdict under any name.
"""

from __future__ import annotations

from typing import Literal

import onnx

from onnxport.convert.graph import all_nodes, graphs

Arithmetic = Literal["fp32", "fp16", "int8"]

# Operators that compute on, or produce, quantized integers: ONNX's own and onnxruntime's com.microsoft
# contrib operators (docs/ContribOperators.md of onnxruntime 1.30). 4-bit weights (MatMulNBits,
# MatMulBnb4, GatherBlockQuantized) count too: they round at least as coarsely as 8 bits, so the
# loosest budget is theirs. Prefixes cover the QLinear* family (QLinearAdd, QLinearSoftmax...) and
# the QOrdered* family; QuickGelu, which also starts with Q, is float arithmetic and is not listed.
QUANTIZED_OPS = frozenset(
    {
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "MatMulInteger",
        "ConvInteger",
        "MatMulInteger16",
        "MatMulIntegerToFloat",
        "DynamicQuantizeMatMul",
        "DynamicQuantizeLSTM",
        "QAttention",
        "QGemm",
        "QEmbedLayerNormalization",
        "QMoE",
        "QuantizeWithOrder",
        "DequantizeWithOrder",
        "QuantizeBFP",
        "DequantizeBFP",
        "MatMulNBits",
        "MatMulBnb4",
        "MatMulFpQ4",
        "GatherBlockQuantized",
    }
)
QUANTIZED_PREFIXES = ("QLinear", "QOrdered")

# 16-bit floats. bfloat16 keeps fewer significant bits than float16 (8 against 11); it is judged
# with the 16-bit budget because that is the nearest the table has, and far nearer than fp32's.
HALF_TYPES = frozenset({onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16})
# Integer attributes that name the element type a node produces (Cast's `to`; RandomNormal,
# EyeLike, Multinomial... `dtype`).
_TYPE_ATTRIBUTES = ("to", "dtype")


def is_quantized(node: onnx.NodeProto) -> bool:
    return node.op_type in QUANTIZED_OPS or node.op_type.startswith(QUANTIZED_PREFIXES)


def quantized_count(model: onnx.ModelProto) -> int:
    """How many quantized operators the model has, in the main graph and every subgraph."""
    return sum(is_quantized(n) for n in all_nodes(model.graph))


def arithmetic(model: onnx.ModelProto) -> Arithmetic:
    """ "int8" when any operator is quantized; else "fp16" when any value is held as a 16-bit float;
    else "fp32".

    int8 wins over fp16: a quantized operator rounds to 8 bits, far coarser than fp16's 11. A value
    held in 16 bits counts wherever it is (a weight, a Constant, a Cast's output, a declared value,
    an input): it was rounded to fp16's precision, so the outputs carry fp16's error whether the
    operators around it compute in fp16 or cast back to fp32 first.
    """
    if quantized_count(model):
        return "int8"
    if any(_holds_half(g) for g in graphs(model.graph)):
        return "fp16"
    return "fp32"


def operator_types(model: onnx.ModelProto) -> list[str]:
    """Sorted "domain/OpType" of every operator in the graph and its subgraphs; "ai.onnx" for the
    default domain (written "" or "ai.onnx" in files)."""
    return sorted({f"{node.domain or 'ai.onnx'}/{node.op_type}" for node in all_nodes(model.graph)})


def _holds_half(graph: onnx.GraphProto) -> bool:
    declared = [*graph.input, *graph.output, *graph.value_info]
    if any(v.type.tensor_type.elem_type in HALF_TYPES for v in declared if v.type.HasField("tensor_type")):
        return True
    if any(t.data_type in HALF_TYPES for t in graph.initializer):
        return True
    if any(s.values.data_type in HALF_TYPES for s in graph.sparse_initializer):
        return True
    return any(_makes_half(node) for node in graph.node)


def _makes_half(node: onnx.NodeProto) -> bool:
    """A node whose attributes make a 16-bit float: Cast to float16, a float16 Constant,
    ConstantOfShape with a float16 value, a random or EyeLike node of dtype float16."""
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.TENSOR and attribute.t.data_type in HALF_TYPES:
            return True
        if attribute.type == onnx.AttributeProto.TENSORS and any(t.data_type in HALF_TYPES for t in attribute.tensors):
            return True
        if (
            attribute.type == onnx.AttributeProto.SPARSE_TENSOR
            and attribute.sparse_tensor.values.data_type in HALF_TYPES
        ):
            return True
        if (
            attribute.type == onnx.AttributeProto.INT
            and attribute.name in _TYPE_ATTRIBUTES
            and attribute.i in HALF_TYPES
        ):
            return True
    return False
