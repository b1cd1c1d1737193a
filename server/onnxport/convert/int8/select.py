"""What the quantizer is told to leave alone: keep_float names mapped through the optimizer's renames,
Gemm rewritten as MatMul + Add, integer lookups (int8/__init__.py's passes that choose nodes)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import onnx
import onnx.version_converter
from onnx import helper, numpy_helper

from onnxport.convert.int8.prep import FLOATS, all_nodes, graphs


def resolve_keep_float(
    fp32: onnx.ModelProto, prepared: onnx.ModelProto, keep: Iterable[str]
) -> tuple[list[str], list[str], list[str]]:
    """fp32 node names (or regular expressions over them) -> nodes of the prepared graph to exclude.

    Returns (nodes_to_exclude in the prepared graph, kept fp32 node names, entries that
    named nothing: unknown names, or patterns that match none). Pre-processing keeps the
    names of the nodes it leaves alone, but onnxruntime's optimizer fuses some: a node that
    is gone (a BatchNormalization folded into its Conv) is found again through the node that
    now produces its output, a MatMul fused with its Add becomes
    the Gemm `<name>/MatMulAddFusion`; Gemm -> MatMul + Add gives `<name>_MatMul` and
    `<name>_Add` (our rewrite and onnxruntime's both do). Nodes folded into constants (shape
    arithmetic) have no counterpart and need none.
    """
    fp32_nodes = all_nodes(fp32)
    names = {n.name for n in fp32_nodes}
    kept, missing = [], []
    for entry in keep:
        if entry in names:
            kept.append(entry)
            continue
        try:
            matched = sorted(n for n in names if n and re.search(entry, n))
        except re.error:
            matched = []
        kept.extend(matched)
        if not matched:
            missing.append(entry)
    kept = sorted(set(kept))
    prepared_nodes = all_nodes(prepared)
    prepared_names = {n.name for n in prepared_nodes}
    producer = {o: n.name for n in prepared_nodes for o in n.output if o}
    outputs = {n.name: list(n.output) for n in fp32_nodes}
    exclude: set[str] = set()
    for name in kept:
        derived = re.compile(rf"(fused )?{re.escape(name)}(/\w*Fusion)?(_token_\d+)?(_MatMul|_Add)?")
        found = {c for c in prepared_names if derived.fullmatch(c)}
        exclude |= found or {producer[o] for o in outputs.get(name, ()) if o in producer}
    return sorted(exclude), kept, missing


def gemm_to_matmul(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite Gemm (weights as initializer) as MatMul + Add, which dynamic int8 quantizes.

    Only the main graph's Gemms; initializers that nothing reads afterwards are dropped,
    counting reads from subgraphs (outer-scope weights of If branches were dropped before,
    and the quantizer then failed with "Invalid model with unknown initializers/tensors").
    """
    initializers = {i.name: i for i in model.graph.initializer}
    nodes = []
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (
            node.op_type != "Gemm"
            or attrs.get("transA", 0)
            or attrs.get("alpha", 1.0) != 1.0
            or attrs.get("beta", 1.0) != 1.0
            or node.input[1] not in initializers
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
    used = {i for n in all_nodes(model) for i in n.input} | {o.name for g in graphs(model.graph) for o in g.output}
    kept = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    return model


def integer_lookups(model: onnx.ModelProto) -> list[str]:
    """Gather nodes that look up integer constants (class labels): nothing there to quantize."""
    integer = {i.name for g in graphs(model.graph) for i in g.initializer if i.data_type not in FLOATS}
    return sorted(n.name for n in all_nodes(model) if n.op_type == "Gather" and n.input[0] in integer and n.name)
