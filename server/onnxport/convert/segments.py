"""Run a big graph as consecutive pieces, each in an onnxruntime session of its own.

onnxruntime's session creation grows faster than the graph. Measured here (CPU seconds, the fp16
overflow probe of a chain of Relu, five nodes per Relu): 1.2 s at 2,500 Relu, 3.5 s at 5,000,
9.3 s at 10,000, 30 s at 20,000; at 100,000 it ran for minutes. Cut into pieces of at most
PIECE_NODES nodes, creation grows with the number of pieces: linear in the graph. A piece reads
the graph's inputs, the values earlier pieces made (handed over here, each dropped after the last
piece that reads it) and the initializers its own nodes read.

A graph that cannot be cut safely runs whole, as before: nodes out of order, or a value crossing
a cut whose type inference could not give as a tensor (a session's inputs must be typed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import helper

from onnxport import runtime
from onnxport.convert.node_order import consumed
from onnxport.errors import ModelFileError
from onnxport.recipe import Feeds

if TYPE_CHECKING:
    import onnxruntime as ort

PIECE_NODES = 4096


class _Piece:
    """Nodes [start, stop) of the graph: what they read from earlier pieces and the feeds, what later
    pieces (or the caller) want of them, and the values no later piece reads once it has run."""

    def __init__(self, make: Callable[[], bytes], nodes: int, inputs: list[str], outputs: list[str], drop: list[str]):
        self.make, self.nodes, self.inputs, self.outputs, self.drop = make, nodes, inputs, outputs, drop
        self.session: ort.InferenceSession | None = None

    def load(self, **options) -> ort.InferenceSession:
        # Serialized only now, one piece at a time: all of them at once would hold the weights twice.
        self.session = runtime.create_session(self.make(), **options)
        return self.session


class Pieces:
    """`model` (its graph outputs: the values wanted) as sessions of at most `size` nodes each."""

    def __init__(
        self,
        model: onnx.ModelProto,
        types: dict[str, int],
        label: str,
        *,
        size: int | None = None,
        in_node_order: bool = False,
    ):
        self.label = label
        self.outputs = [o.name for o in model.graph.output]
        self.graph_inputs = {i.name for i in model.graph.input}
        size = size or PIECE_NODES
        cut = _cut(model, types, size) if len(model.graph.node) > size else None
        options = {"label": label, "in_node_order": in_node_order}
        if cut is not None:
            try:
                for piece in cut:
                    piece.load(**options)
                self.pieces = cut
                return
            except ModelFileError:
                pass  # a piece onnxruntime refuses: the whole graph says what is wrong, if anything
        whole = _Piece(model.SerializeToString, len(model.graph.node), [], self.outputs, [])
        whole.inputs = [i.name for i in whole.load(**options).get_inputs()]
        self.pieces = [whole]

    def run(self, feeds: Feeds) -> dict[str, np.ndarray]:
        """Every wanted output, for one feed."""
        values: dict[str, np.ndarray] = {k: v for k, v in feeds.items() if k in self.graph_inputs}
        for piece in self.pieces:
            values.update(
                runtime.run_outputs(
                    piece.session, piece.outputs, {n: values[n] for n in piece.inputs if n in values}, label=self.label
                )
            )
            for name in piece.drop:
                values.pop(name, None)
        return {name: values[name] for name in self.outputs}


def _cut(model: onnx.ModelProto, types: dict[str, int], size: int) -> list[_Piece] | None:
    """The pieces, or None when the graph cannot be cut (see the module's docstring)."""
    graph = model.graph
    nodes = list(graph.node)
    produced_by: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            if name:
                produced_by.setdefault(name, index // size)
    inputs = {i.name: i for i in graph.input}
    wanted = {o.name: o for o in graph.output}
    initializers = {i.name: i for i in graph.initializer}
    count = (len(nodes) + size - 1) // size
    reads: list[list[str]] = []
    last_read: dict[str, int] = {}
    for piece in range(count):
        names = list(dict.fromkeys(n for node in nodes[piece * size : (piece + 1) * size] for n in consumed(node)))
        for name in names:
            made = produced_by.get(name)
            if made is not None and made > piece:
                return None  # read before it is made: out of order
            if made is not None and made < piece and types.get(name) is None:
                return None  # crossing a cut untyped
            last_read[name] = piece
        reads.append(names)
    pieces = []
    for piece in range(count):
        part = nodes[piece * size : (piece + 1) * size]
        made_here = [n for node in part for n in node.output if n]
        outputs = [n for n in made_here if n in wanted or last_read.get(n, piece) > piece]
        crossing = [n for n in reads[piece] if n in produced_by and produced_by[n] < piece]
        from_graph = [n for n in reads[piece] if n in inputs and n not in produced_by]
        drop = [n for n in crossing if last_read[n] == piece and n not in wanted]
        graph_io = (
            [*(inputs[n] for n in from_graph), *(_typed(n, types) for n in crossing)],
            [wanted[n] if n in wanted else _typed(n, types) for n in outputs],
        )
        weights = [initializers[n] for n in reads[piece] if n in initializers and n not in produced_by]
        make = functools.partial(_piece_model, model, part, *graph_io, weights, f"{graph.name}_piece{piece}")
        pieces.append(_Piece(make, len(part), [*from_graph, *crossing], outputs, drop))
    return pieces


def _piece_model(model: onnx.ModelProto, part: list, inputs: list, outputs: list, weights: list, name: str) -> bytes:
    sub = helper.make_graph(part, name, inputs, outputs, weights)
    read = {n for node in part for n in consumed(node)}
    sub.sparse_initializer.extend(s for s in model.graph.sparse_initializer if s.values.name in read)
    made = helper.make_model(sub, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    made.functions.extend(model.functions)
    return made.SerializeToString()


def _typed(name: str, types: dict[str, int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, types[name], None)
