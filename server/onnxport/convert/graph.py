"""Walking an ONNX graph and the subgraphs its nodes carry (If branches, Loop and Scan bodies)."""

from __future__ import annotations

from collections.abc import Iterator

import onnx


def copy_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A deep copy, to change without touching the caller's model."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy


def subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """(attribute name, graph) of every graph a node holds."""
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            yield attribute.name, attribute.g
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            for sub in attribute.graphs:
                yield attribute.name, sub


def graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graph and every subgraph inside it, outer ones first."""
    yield graph
    for node in graph.node:
        for _, sub in subgraphs(node):
            yield from graphs(sub)


def all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for g in graphs(graph):
        yield from g.node


def name_nodes(graph: onnx.GraphProto) -> int:
    """Give every unnamed node, in every subgraph, a unique name; returns how many were named.

    The fp16 converter names its Casts after the node ("<name>_output_cast_0"), so unnamed
    nodes made duplicate value names and broke SSA; the fallback search keeps nodes by name.
    """
    every = list(graphs(graph))
    taken = {n.name for g in every for n in g.node if n.name}
    count = 0
    for g in every:
        for index, node in enumerate(g.node):
            if node.name:
                continue
            node.name = unique_name(f"{node.op_type}_{g.name or 'graph'}_{index}", taken)
            count += 1
    return count


def unique_name(base: str, taken: set[str]) -> str:
    """base, or base_1, base_2...: the first not in taken, which is then added to it."""
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def value_names(graph: onnx.GraphProto) -> set[str]:
    """Every value and node name used anywhere in the graph and its subgraphs."""
    names: set[str] = set()
    for g in graphs(graph):
        names.update(v.name for v in [*g.input, *g.output, *g.value_info])
        names.update(i.name for i in g.initializer)
        for node in g.node:
            names.add(node.name)
            names.update(node.input)
            names.update(node.output)
    names.discard("")
    return names
