"""Weight-only int8: every large float weight stored as int8 with one scale per channel, the arithmetic in float.

Dynamic and static int8 quantize the operators onnxruntime has integer kernels for (MatMul, Conv,
Gather, LSTM); a GRU, a Gemm cell, an STFT written as Conv and Log, or a model whose int8 misses its
budget keeps its weights in fp32. Here any operator's weight shrinks: the initializer becomes int8
behind a DequantizeLinear whose output keeps the weight's name, so every reader is unchanged and
computes in float (the error is the weights' rounding alone, never the activations').

An embedding table read by Gather is gathered as int8 first and only the rows read are turned back to
float: a DequantizeLinear of the whole table would hold a float copy of it at every run.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxport.convert.arithmetic import is_quantized, quantized_count
from onnxport.convert.graph import copy_model
from onnxport.convert.int8 import prep
from onnxport.convert.resize_inputs import folded_resize_inputs
from onnxport.errors import VariantSkipped
from onnxport.repository.variant_record import Settings

DEQUANTIZE_OPSET = 10  # DequantizeLinear's first opset: below it (an opset upgrade failed) nothing is stored

# A weight smaller than this stays float: biases and norms are a rounding's worth of the file, and
# their error is not spread over a dot product the way a matrix's is.
MIN_ELEMENTS = 1024

# The axis whose slices get a scale each: the output channel, so that each output's dot product
# is rounded on its own scale. Input positions by operator: MatMul's B is [K, N] (N outputs), Gemm's
# B is [K, N] or with transB [N, K], Conv's W [M, C, ...], ConvTranspose's [C, M/group, ...], and
# the recurrent cells' W and R [directions, gates x hidden, inputs].
_AXIS = {
    ("MatMul", 1): -1,
    ("Conv", 1): 0,
    ("ConvTranspose", 1): 1,
    ("LSTM", 1): 1,
    ("LSTM", 2): 1,
    ("GRU", 1): 1,
    ("GRU", 2): 1,
    ("RNN", 1): 1,
    ("RNN", 2): 1,
}


def make_int8_weights(model: onnx.ModelProto, keep_float: tuple[str, ...] = ()) -> tuple[onnx.ModelProto, Settings]:
    """A copy of `model` with every float initializer of at least MIN_ELEMENTS elements (in every graph)
    stored as per-channel symmetric int8. keep_float: node names whose weights stay float (the fallback
    search's lever). Raises VariantSkipped when no weight is large enough."""
    if already := quantized_count(model):
        raise VariantSkipped(f"already quantized: {already} quantized operators")
    model = copy_model(model)
    prep.constants_to_initializers(model)  # a weight written as a Constant node is a weight too
    model, upgrade_failed = prep.upgrade_opset(model)
    stored = store_weights(model, set(keep_float))
    if not stored:
        raise VariantSkipped(
            f"nothing to store in int8: no float weight of at least {MIN_ELEMENTS:,} elements "
            "outside the nodes kept in float"
        )
    per_tensor = prep.default_opset(model) < prep.QDQ_MIN_OPSET
    settings: Settings = {
        "weights": "int8 per channel" if not per_tensor else "int8 per tensor",
        "weights_stored": stored,
    }
    if upgrade_failed:
        settings["preprocess"] = upgrade_failed
    if keep_float:
        settings["kept_float"] = sorted(keep_float)
    return model, settings


def candidates(model: onnx.ModelProto) -> set[str]:
    """The nodes the fallback search may name: those that read a weight this variant stores."""
    names: set[str] = set()
    _, resize_weights = folded_resize_inputs(model)
    for graph in prep.graphs(model.graph):
        large = {i.name for i in graph.initializer if _large_float(i) and i.name not in resize_weights}
        names |= {n.name for n in graph.node if n.name and large.intersection(n.input)}
    return names


def _large_float(init: onnx.TensorProto) -> bool:
    """A weight this variant stores (of readers that allow it): float, of MIN_ELEMENTS elements or more."""
    return init.data_type == onnx.TensorProto.FLOAT and int(np.prod(init.dims, dtype=np.int64)) >= MIN_ELEMENTS


def store_weights(model: onnx.ModelProto, kept: set[str]) -> int:
    """Store the model's large float weights as int8 in place (every graph); how many were stored. Per
    channel from opset 13 (DequantizeLinear's `axis`), else one scale per weight."""
    if prep.default_opset(model) < DEQUANTIZE_OPSET:
        return 0
    per_tensor = prep.default_opset(model) < prep.QDQ_MIN_OPSET
    # A weight a Resize's inputs are computed from stays float: behind a DequantizeLinear onnxruntime no
    # longer folds them at load, and its cubic kernel may then refuse what it is given (resize_inputs.py).
    _, resize_weights = folded_resize_inputs(model)
    return sum(_store_graph(graph, kept, per_tensor, resize_weights) for graph in prep.graphs(model.graph))


def _store_graph(graph: onnx.GraphProto, kept: set[str], per_tensor: bool, float_weights: set[str]) -> int:
    readers: dict[str, list[tuple[onnx.NodeProto, int]]] = defaultdict(list)
    for node in graph.node:
        for position, name in enumerate(node.input):
            readers[name].append((node, position))
    # An If branch or a Loop body reads the graph's weights by name too (silero's LSTM weights): the
    # DequantizeLinear's output keeps the name, so those readers see the float weight as before.
    for node in _subgraph_nodes(graph):
        for position, name in enumerate(node.input):
            readers[name].append((node, -1))
    graph_inputs = {i.name for i in graph.input}
    front: list[onnx.NodeProto] = []
    stored = 0
    for index, init in enumerate(list(graph.initializer)):
        reads = readers.get(init.name, [])
        # A quantized operator's float inputs (MatMulNBits' scales) are its own: never stored again.
        if (
            not _large_float(init)
            or init.name in graph_inputs
            or init.name in float_weights
            or not reads
            or any(node.name in kept or is_quantized(node) for node, _ in reads)
        ):
            continue
        weight = numpy_helper.to_array(init)
        if not np.all(np.isfinite(weight)):
            continue
        # Unsqueeze takes its axes as an input from opset 13, as DequantizeLinear its `axis`.
        gathers = [] if per_tensor else [node for node, position in reads if _gathers_rows(node, position)]
        axis = None if per_tensor or weight.ndim < 2 else _axis(reads, gathers, weight.ndim)
        quantized, scale = _quantize(weight, axis)
        base = init.name
        graph.initializer[index].CopyFrom(numpy_helper.from_array(quantized, f"{base}.int8"))
        graph.initializer.append(numpy_helper.from_array(scale, f"{base}.scale"))
        for node in gathers:
            _gather_then_dequantize(graph, node, base)
        if len(gathers) < len(reads):  # other readers take the whole weight back in float
            # The zero point is written although it is 0: with session.x64quantprecision onnxruntime 1.30 fails
            # a per-axis DequantizeLinear that has none ("x_zero_point must be null or 1D tensor").
            graph.initializer.append(numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8), f"{base}.zero"))
            dequantize = helper.make_node(
                "DequantizeLinear", [f"{base}.int8", f"{base}.scale", f"{base}.zero"], [base], name=f"{base}.dequantize"
            )
            if axis is not None:
                dequantize.attribute.append(helper.make_attribute("axis", axis))
            front.append(dequantize)
        stored += 1
    for node in reversed(front):  # their inputs are initializers: first in the graph is in order
        graph.node.insert(0, node)
    return stored


def _subgraph_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    return [n for sub in list(prep.graphs(graph))[1:] for n in sub.node]


def _gathers_rows(node: onnx.NodeProto, position: int) -> bool:
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    return node.op_type == "Gather" and node.domain in ("", "ai.onnx") and position == 0 and axis == 0


def _axis(reads, gathers, rank: int) -> int:
    if gathers:
        return 0  # a scale per row, so that a gathered row carries its own
    node, position = reads[0]
    if node.op_type == "Gemm" and position == 1:
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    axis = _AXIS.get((node.op_type, position), 0)
    return axis % rank


def _quantize(weight: np.ndarray, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 (zero point 0, -127..127) with one scale per slice along `axis`, or one in all."""
    if axis is None:
        peak = np.abs(weight).max(keepdims=False)
    else:
        others = tuple(d for d in range(weight.ndim) if d != axis)
        peak = np.abs(weight).max(axis=others)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    shaped = scale if axis is None else scale.reshape([-1 if d == axis else 1 for d in range(weight.ndim)])
    quantized = np.clip(np.rint(weight / shaped), -127, 127).astype(np.int8)
    return quantized, np.asarray(scale, dtype=np.float32)


def _gather_then_dequantize(graph: onnx.GraphProto, gather: onnx.NodeProto, base: str) -> None:
    """Gather(table, ids) -> Gather(int8 table, ids) as float x Gather(scales, ids), unsqueezed to a column."""
    ids, out, name = gather.input[1], gather.output[0], gather.name or gather.output[0]
    rows, scales, column = f"{out}.int8_rows", f"{out}.row_scales", f"{out}.row_scale_column"
    axes = f"{out}.last_axis"
    graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), axes))
    replacement = [
        helper.make_node("Gather", [f"{base}.int8", ids], [rows], name=f"{name}.int8", axis=0),
        helper.make_node("Cast", [rows], [f"{rows}.float"], name=f"{name}.cast", to=onnx.TensorProto.FLOAT),
        helper.make_node("Gather", [f"{base}.scale", ids], [scales], name=f"{name}.scales", axis=0),
        helper.make_node("Unsqueeze", [scales, axes], [column], name=f"{name}.column"),
        helper.make_node("Mul", [f"{rows}.float", column], [out], name=f"{name}.dequantize"),
    ]
    position = list(graph.node).index(gather)
    del graph.node[position]
    for offset, node in enumerate(replacement):
        graph.node.insert(position + offset, node)
