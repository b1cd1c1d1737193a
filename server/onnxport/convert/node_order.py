"""Nodes in dependency order, for graphs that list them out of order.

onnxruntime sorts a graph's nodes itself and runs such a graph; the ONNX checker refuses it
("Nodes in a graph must be topologically sorted"). Exporters that append nodes late write them.
Reordering the node list changes no computation, so the import sorts instead of refusing.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import onnx

from onnxport.convert.graph import subgraphs


def sort_nodes(graph: onnx.GraphProto) -> int:
    """Stable topological sort of graph.node and of every subgraph's, in place: a node moves only
    when an input's producer comes after it. Returns how many nodes changed place (0: already in
    order). A cycle leaves that graph's order as it was, for the checker to report."""
    moved = 0
    for node in graph.node:
        for _, sub in subgraphs(node):
            moved += sort_nodes(sub)
    order = _order(graph)
    if order is None or order == list(range(len(order))):
        return moved
    sorted_nodes = []
    for index in order:
        copy = onnx.NodeProto()
        copy.CopyFrom(graph.node[index])  # copies: the originals go with the list they belong to
        sorted_nodes.append(copy)
    del graph.node[:]
    graph.node.extend(sorted_nodes)
    return moved + sum(1 for position, index in enumerate(order) if position != index)


def _order(graph: onnx.GraphProto) -> list[int] | None:
    """Kahn's algorithm, always taking the earliest ready node of the original list; None on a cycle."""
    producer: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for name in node.output:
            if name:
                producer.setdefault(name, index)
    users: list[list[int]] = [[] for _ in graph.node]
    waiting = [0] * len(graph.node)
    for index, node in enumerate(graph.node):
        # Graph inputs, initializers and outer-scope names have no producer here: always available.
        for source in {producer[name] for name in consumed(node) if name in producer} - {index}:
            users[source].append(index)
            waiting[index] += 1
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for user in users[index]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    return order if len(order) == len(graph.node) else None


def consumed(node: onnx.NodeProto) -> Iterator[str]:
    """The node's inputs and every name its subgraphs read (outer-scope values are its inputs too)."""
    yield from (name for name in node.input if name)
    for _, sub in subgraphs(node):
        for inner in sub.node:
            yield from consumed(inner)
