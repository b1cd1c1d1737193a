"""Make the fp16 and int8 variants of an fp32 model.

Each function takes the checked fp32 model and returns the variant's model,
or raises VariantSkipped when the variant would be the fp32 model again.
"""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxport import runtime
from onnxport.recipe import Feeds

FP16_MAX = 65504.0
# Values above half the fp16 range overflow once a few fp16 roundings add up.
FP16_SAFE = FP16_MAX / 2
QUANTIZED_OPS = {
    "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "MatMulInteger",
    "ConvInteger", "QLinearMatMul", "QLinearConv", "DynamicQuantizeMatMul", "QGemm",
}


# Static int8 quantizes the operators that carry weights (and their inputs). Quantizing
# everything else too (Where, Reshape...) put the attention mask's -3.4e38 into an
# 8-bit range on minilm: cosine similarity to fp32 fell to 0.26.
STATIC_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm", "Gather")


class VariantSkipped(Exception):
    """The variant would not differ from fp32 (nothing to convert or quantize)."""


def operator_histogram(model: onnx.ModelProto) -> dict[str, int]:
    counts = Counter(
        n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in model.graph.node
    )
    return dict(sorted(counts.items()))


# ---------------------------------------------------------------- fp16


def make_fp16(model: onnx.ModelProto, feeds: Iterable[Feeds]) -> tuple[onnx.ModelProto, dict]:
    """fp16 weights and activations, fp32 inputs and outputs, overflowing nodes kept in fp32."""
    from onnxconverter_common import float16

    feeds = list(feeds)
    blocked = overflowing_nodes(model, feeds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it warns for every constant it clips to +/-1e4
        converted = float16.convert_float_to_float16(
            model, keep_io_types=True, node_block_list=sorted(blocked), disable_shape_infer=False
        )
    converted = _cast_mixed_inputs(model, converted, blocked)
    if not _has_fp16(converted):
        raise VariantSkipped("no float operator that fp16 conversion applies to")
    settings = {
        "tool": "onnxconverter_common.float16.convert_float_to_float16",
        "keep_io_types": True,
        "blocked_nodes": sorted(blocked),
        "blocked_ops": sorted(set(float16.DEFAULT_OP_BLOCK_LIST) & {n.op_type for n in model.graph.node}),
        "overflow_threshold": FP16_SAFE,
    }
    return converted, settings


def _cast_mixed_inputs(original: onnx.ModelProto, model: onnx.ModelProto, blocked: set[str]) -> onnx.ModelProto:
    """Add the Casts the converter forgets where fp32 values meet fp16 ones.

    The converter's value_info can claim fp16 for values that stay fp32 (a Cast
    to float it leaves alone, a blocked ai.onnx.ml Scaler in scikit-learn graphs),
    and ONNX shape inference stops at the first such node. So types are followed
    forward here: a Cast gives its `to`; a blocked node gets fp32 inputs and keeps
    the fp32 model's types; any other node gets fp16 inputs and makes fp16 of
    what was fp32.
    """
    fp32, fp16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
    inferred = onnx.shape_inference.infer_shapes(original)
    original_types = {
        v.name: v.type.tensor_type.elem_type
        for v in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]
    }
    original_nodes = {n.name: n for n in original.graph.node}
    types = {v.name: v.type.tensor_type.elem_type for v in model.graph.input}
    types.update({i.name: i.data_type for i in model.graph.initializer})
    nodes = []
    for node in model.graph.node:
        keeps_fp32 = node.name in blocked or node.op_type in _fp16_blocked_ops()
        if node.op_type != "Cast":
            want, other = (fp32, fp16) if keeps_fp32 else (fp16, fp32)
            for position, name in enumerate(node.input):
                if types.get(name) == other:
                    cast_name = f"{name}_cast_for_{node.name}"
                    nodes.append(helper.make_node("Cast", [name], [cast_name], name=cast_name, to=want))
                    types[cast_name] = want
                    node.input[position] = cast_name
        nodes.append(node)
        source = original_nodes.get(node.name)
        for position, name in enumerate(node.output):
            if node.op_type == "Cast":
                types[name] = helper.get_attribute_value(node.attribute[0])
                continue
            before = original_types.get(source.output[position]) if source and position < len(source.output) else None
            types[name] = fp16 if before == fp32 and not keeps_fp32 else before
    del model.graph.node[:]
    model.graph.node.extend(_without_round_trips(nodes, types, {o.name for o in model.graph.output}))
    # Let onnxruntime infer types afresh: the converter's value_info is what misled it.
    del model.graph.value_info[:]
    return model


def _without_round_trips(nodes: list, types: dict[str, int], graph_outputs: set[str]) -> list:
    """Drop Cast(fp32 -> fp16) -> Cast(-> fp32) pairs: a value over 65504 would come back as inf.

    (The converter makes them when a node it keeps in fp32 reads another fp32 node's output.)
    """
    fp32, fp16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
    producer = {out: n for n in nodes for out in n.output}
    rename: dict[str, str] = {}
    dropped = set()
    for node in nodes:
        if node.op_type != "Cast" or helper.get_attribute_value(node.attribute[0]) != fp32:
            continue
        first = producer.get(node.input[0])
        if (
            first is not None and first.op_type == "Cast"
            and helper.get_attribute_value(first.attribute[0]) == fp16
            and types.get(first.input[0]) == fp32 and node.output[0] not in graph_outputs
        ):
            rename[node.output[0]] = first.input[0]
            dropped.add(id(node))
    kept = [n for n in nodes if id(n) not in dropped]
    for node in kept:
        for position, name in enumerate(node.input):
            if name in rename:
                node.input[position] = rename[name]
    used = {name for n in kept for name in n.input} | graph_outputs
    # A first Cast that nothing reads any more goes too.
    return [n for n in kept if n.op_type != "Cast" or any(out in used for out in n.output)]


def _fp16_blocked_ops() -> set[str]:
    from onnxconverter_common import float16

    return set(float16.DEFAULT_OP_BLOCK_LIST)


def _has_fp16(model: onnx.ModelProto) -> bool:
    fp16 = onnx.TensorProto.FLOAT16
    return any(t.data_type == fp16 for t in model.graph.initializer) or any(
        n.op_type == "Cast" and helper.get_attribute_value(n.attribute[0]) == fp16 for n in model.graph.node
    )


def overflowing_nodes(model: onnx.ModelProto, feeds: list[Feeds]) -> set[str]:
    """Names of nodes that read or write a float value beyond what fp16 holds safely.

    Both sides matter: a node kept in fp32 still hands its output to the next
    node through a Cast to fp16, so the consumer must stay in fp32 too.
    """
    float_values = _float_value_names(model)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    existing = {o.name for o in probe.graph.output}
    for name in sorted(float_values - existing):
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = runtime.create_session(probe.SerializeToString(), label="fp16 overflow probe")
    peak: dict[str, float] = {}
    for feed in feeds:
        for name, value in runtime.run(session, feed, label="fp16 overflow probe").items():
            if name in float_values and value.size:
                finite = np.abs(value[np.isfinite(value)]) if value.dtype.kind == "f" else np.abs(value)
                top = float(finite.max()) if finite.size else 0.0
                if not np.isfinite(value).all():
                    top = float("inf")
                peak[name] = max(peak.get(name, 0.0), top)
    hot = {name for name, top in peak.items() if top > FP16_SAFE}
    return {
        node.name for node in model.graph.node
        if hot & (set(node.input) | set(node.output))
    }


def _float_value_names(model: onnx.ModelProto) -> set[str]:
    inferred = onnx.shape_inference.infer_shapes(model)
    values = [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]
    initializers = {i.name for i in model.graph.initializer}
    return {
        v.name for v in values
        if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT and v.name not in initializers
    }


# ---------------------------------------------------------------- int8


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
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

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
