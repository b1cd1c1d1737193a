"""One copy of a tied embedding in the file: the token lookup reads the output projection's matrix.

A model whose output projection shares its weight with the token embedding (SmolLM2, most small decoders)
exports to two initializers: the embedding table E [vocab, hidden] for the Gather of `input_ids`, and E
transposed [hidden, vocab], folded by the exporter, for the logits' MatMul. The MatMul keeps its matrix (a
constant weight, which int8 and int4 quantizers want); the lookup becomes a Gather of its columns (axis 1,
[hidden, batch, sequence]) and a Transpose of that small activation back to [batch, sequence, hidden].
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxport.convert.decoder import cache_names


def share_tied_embedding(model: onnx.ModelProto) -> int:
    """Rewrites `model` in place when its embedding table is the transpose of a MatMul weight; bytes saved."""
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    lookups = [
        node
        for node in graph.node
        if node.op_type == "Gather"
        and node.input[1] == cache_names.INPUT_IDS
        and node.input[0] in initializers
        and len(initializers[node.input[0]].dims) == 2
        and not node.attribute  # axis 0, the default
    ]
    if len(lookups) != 1:
        return 0
    lookup = lookups[0]
    table = initializers[lookup.input[0]]
    vocab, hidden = table.dims
    candidates = [
        node.input[1]
        for node in graph.node
        if node.op_type == "MatMul"
        and node.input[1] in initializers
        and list(initializers[node.input[1]].dims) == [hidden, vocab]
    ]
    if len(candidates) != 1:
        return 0
    projection = initializers[candidates[0]]
    if not np.array_equal(numpy_helper.to_array(table).T, numpy_helper.to_array(projection)):
        return 0  # an untied head: two different matrices
    if sum(table.name in node.input for node in graph.node) != 1:
        return 0
    columns = f"{lookup.output[0]}/columns"
    gather = helper.make_node("Gather", [projection.name, lookup.input[1]], [columns], name=lookup.name, axis=1)
    transpose = helper.make_node(
        "Transpose", [columns], [lookup.output[0]], name=f"{lookup.name}/transpose", perm=[1, 2, 0]
    )
    position = list(graph.node).index(lookup)
    graph.node.remove(lookup)
    graph.node.insert(position, transpose)
    graph.node.insert(position, gather)
    saved = len(table.raw_data) or table.ByteSize()
    graph.initializer.remove(table)
    return saved
