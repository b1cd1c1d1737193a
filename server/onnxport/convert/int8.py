"""The int8 variants: dynamic (weights ahead, activations per run) and static QDQ (calibrated)."""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxport.errors import VariantSkipped
from onnxport.recipe import Feeds

QUANTIZED_OPS = {
    "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "MatMulInteger",
    "ConvInteger", "QLinearMatMul", "QLinearConv", "DynamicQuantizeMatMul", "QGemm",
}
# Static int8 quantizes the operators that carry weights (and their inputs). Quantizing
# everything else too (Where, Reshape...) put the attention mask's -3.4e38 into an
# 8-bit range on minilm: cosine similarity to fp32 fell to 0.26.
STATIC_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm", "Gather")


def make_int8_dynamic(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict]:
    """Dynamic int8: weights quantized ahead, activations per run.

    Conv graphs get uint8 weights: onnxruntime's ConvInteger (and so
    onnxruntime-web's) takes uint8 weights only.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    has_conv = any(n.op_type == "Conv" for n in model.graph.node)
    weight_type = QuantType.QUInt8 if has_conv else QuantType.QInt8
    with tempfile.TemporaryDirectory(prefix="onnxport-int8d-") as tmp:
        source = Path(tmp) / "prepared.onnx"
        target = Path(tmp) / "quantized.onnx"
        prepared = gemm_to_matmul(_preprocessed(model, Path(tmp)))
        onnx.save(prepared, source)
        with _quiet():
            quantize_dynamic(source, target, weight_type=weight_type, per_channel=True,
                             nodes_to_exclude=_integer_lookups(prepared))
        quantized = onnx.load(target)
    _require_quantized(quantized)
    settings = {
        "tool": "onnxruntime.quantization.quantize_dynamic",
        "weight_type": weight_type.name,
        "per_channel": True,
        "preprocess": "quant_pre_process, Gemm rewritten as MatMul + Add",
    }
    return quantized, settings


def make_int8_static(
    model: onnx.ModelProto, calibration: list[Feeds], keep_float: tuple[str, ...] = ()
) -> tuple[onnx.ModelProto, dict]:
    """Static int8 in QDQ format, activation ranges calibrated on the recipe's inputs.

    Nodes whose names match a `keep_float` pattern stay in float.
    """
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    if not calibration:
        raise VariantSkipped("no calibration inputs")
    with tempfile.TemporaryDirectory(prefix="onnxport-int8s-") as tmp:
        source = Path(tmp) / "prepared.onnx"
        target = Path(tmp) / "quantized.onnx"
        prepared = _preprocessed(model, Path(tmp))
        onnx.save(prepared, source)
        excluded = sorted(n.name for n in prepared.graph.node if any(re.search(p, n.name) for p in keep_float))
        excluded += _integer_lookups(prepared)
        options = {"CalibTensorRangeSymmetric": False}
        run = lambda extra: quantize_static(  # noqa: E731 - the same call, twice at most
            source, target, _Reader(calibration),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_exclude=excluded,
            op_types_to_quantize=list(STATIC_OPS),
            calibrate_method=CalibrationMethod.MinMax,
            extra_options=extra,
        )
        with _quiet():
            try:
                run(options)
            except ValueError:
                # onnxruntime 1.30's int32-bias weight-scale adjustment fails on per-channel Gemm
                # ("truth value of an array is ambiguous"). Keeping that bias in float avoids it
                # (an int32 bias without the adjustment ran wrong on onnxruntime-web's WebGPU).
                options["QuantizeBias"] = False
                options["QDQDisableWeightAdjustForInt32Bias"] = True
                run(options)
        quantized = onnx.load(target)
    _require_quantized(quantized)
    settings = {
        "tool": "onnxruntime.quantization.quantize_static",
        "format": "QDQ",
        "activation_type": "QUInt8",
        "weight_type": "QInt8",
        "per_channel": True,
        "calibration_method": "MinMax",
        "calibration_batches": len(calibration),
        "kept_float": excluded,
        "extra_options": options,
        "op_types": list(STATIC_OPS),
        "preprocess": "quant_pre_process",
    }
    return quantized, settings


class _Reader:
    """onnxruntime's CalibrationDataReader protocol over a list of feeds."""

    def __init__(self, feeds: list[Feeds]):
        self._feeds = iter(feeds)

    def get_next(self):
        return next(self._feeds, None)


def _preprocessed(model: onnx.ModelProto, tmp: Path) -> onnx.ModelProto:
    """quant_pre_process (symbolic shapes + optimization); plain ONNX shapes if symbolic fails."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    source, target = tmp / "fp32.onnx", tmp / "preprocessed.onnx"
    onnx.save(model, source)
    # Symbolic shape inference writes scratch files into the working folder: keep them in tmp.
    with _quiet(), contextlib.chdir(tmp):
        try:
            quant_pre_process(source, target)
        except Exception:  # symbolic shape inference does not know ai.onnx.ml ops
            quant_pre_process(source, target, skip_symbolic_shape=True)
    return onnx.load(target)


def gemm_to_matmul(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite Gemm (weights as initializer) as MatMul + Add, which dynamic int8 quantizes."""
    initializers = {i.name: i for i in model.graph.initializer}
    nodes = []
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (
            node.op_type != "Gemm" or attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0
            or attrs.get("beta", 1.0) != 1.0 or node.input[1] not in initializers
        ):
            nodes.append(node)
            continue
        weight = numpy_helper.to_array(initializers[node.input[1]])
        if attrs.get("transB", 0):
            weight = weight.T
        weight_name = f"{node.input[1]}_matmul"
        model.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(weight), weight_name))
        product = f"{node.output[0]}_matmul" if len(node.input) > 2 else node.output[0]
        nodes.append(helper.make_node("MatMul", [node.input[0], weight_name], [product], name=f"{node.name}_MatMul"))
        if len(node.input) > 2 and node.input[2]:
            nodes.append(helper.make_node("Add", [product, node.input[2]], [node.output[0]], name=f"{node.name}_Add"))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    used = {i for n in model.graph.node for i in n.input}
    kept = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    return model


def _integer_lookups(model: onnx.ModelProto) -> list[str]:
    """Gather nodes that look up integer constants (class labels): nothing there to quantize."""
    integer = {i.name for i in model.graph.initializer if i.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)}
    return [n.name for n in model.graph.node if n.op_type == "Gather" and n.input[0] in integer and n.name]


def _require_quantized(model: onnx.ModelProto) -> None:
    if not QUANTIZED_OPS & {n.op_type for n in model.graph.node}:
        raise VariantSkipped("no operator that onnxruntime quantizes (MatMul, Conv, Gemm, Gather...)")


class _quiet:
    """Silence the quantizer's logging and warnings for the duration of a call."""

    def __enter__(self):
        import onnxruntime

        # Calibration sessions warn about initializers they prune; nothing to act on.
        onnxruntime.set_default_logger_severity(3)
        self._level = logging.root.manager.disable
        logging.disable(logging.WARNING)
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._warnings.__exit__(*exc)
        logging.disable(self._level)
