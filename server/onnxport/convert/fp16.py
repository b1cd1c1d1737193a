"""The fp16 variant: fp16 weights and activations, fp32 inputs and outputs, overflowing nodes kept in fp32."""

from __future__ import annotations

import warnings
from typing import Iterable

import numpy as np
import onnx
from onnx import helper

from onnxport import runtime
from onnxport.errors import VariantSkipped
from onnxport.recipe import Feeds

FP16_MAX = 65504.0
# Values above half the fp16 range overflow once a few fp16 roundings add up.
FP16_SAFE = FP16_MAX / 2


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


