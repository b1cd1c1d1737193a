"""fp16: the values (in every graph) that overflow what fp16 holds safely, found on real inputs."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from onnxport.convert import segments
from onnxport.convert.fp16.plan import _value_types
from onnxport.convert.fp16.rules import CONTROL_FLOW, FLOAT, FP16_SAFE
from onnxport.convert.graph import copy_model, graphs, subgraphs, unique_name, value_names
from onnxport.recipe import Feeds

# ---------------------------------------------------------------- overflow


def overflowing_nodes(model: onnx.ModelProto, feeds: list[Feeds]) -> set[str]:
    """Names of nodes that read or write a float value beyond what fp16 holds safely.

    Both sides matter: a node kept in fp32 still hands its output to the next
    node through a Cast to fp16, so the consumer must stay in fp32 too.
    """
    return _overflow(model, feeds)[0]


def _overflow(model: onnx.ModelProto, feeds: list[Feeds]) -> tuple[set[str], dict[str, float]]:
    """(nodes touching a hot value, the peak max|value| of every float value on the feeds), in every graph.

    Values inside subgraphs are seen through their peaks: each body hands out max|value| of its
    values as extra outputs (an If's other branch gives 0, a Loop or Scan carries the running max).
    An If, Loop or Scan is not kept for a hot value crossing it: that value stays fp32 there.
    """
    types, _ = _value_types(model)
    probe = copy_model(model)
    initializers = {i.name for i in model.graph.initializer}
    inputs_main = [v.name for v in model.graph.input if types.get(v.name) == FLOAT and v.name not in initializers]
    maker = _PeakMaker(types, value_names(probe.graph))
    peaks = dict(maker.children(probe.graph))  # value -> peak
    # The main graph's values are reduced in the graph too, right after their producers, and the probe
    # runs in node order: its outputs are scalars, so no value outlives its readers (exposing every
    # value made onnxruntime hold all of them at once: 2.9 GB for rapidocr-det-v4, per feed).
    main = maker.reduce(probe.graph, finite=True)  # (value, peak, non-finite sentinel)
    del probe.graph.output[:]
    for name in [*peaks.values(), *(out for _, top, bad in main for out in (top, bad))]:
        probe.graph.output.append(helper.make_tensor_value_info(name, FLOAT, []))
    # In pieces (segments.py): the probe has five nodes per float value, and onnxruntime's session
    # creation grows faster than the graph (a 100,000-node chain's probe did not load in minutes).
    probe_types = {**types, **dict.fromkeys(maker.made, FLOAT)}
    pieces = (
        segments.Pieces(probe, probe_types, "fp16 overflow probe", in_node_order=True) if probe.graph.output else None
    )  # no float value: nothing to run
    peak: dict[str, float] = {}
    for feed in feeds:
        got = pieces.run(feed) if pieces else {}
        for name in inputs_main:
            value = np.asarray(feed.get(name, np.zeros(0)))
            if value.size and value.dtype.kind == "f":
                _add_peak(peak, name, *_array_peak(value))
        for name, top, bad in main:
            # ReduceMax of an empty value is -inf: no entry, as for an empty array before.
            if float(got[top]) != float("-inf"):
                _add_peak(peak, name, float(got[top]), bool(np.isnan(got[bad])))
        for name, out in peaks.items():
            largest = float(got[out])  # -inf: the value was empty
            if np.isnan(largest) or largest > 0:
                peak[name] = max(peak.get(name, 0.0), float("inf") if np.isnan(largest) else largest)
    hot = {name for name, top in peak.items() if top > FP16_SAFE}
    nodes = {
        node.name
        for g in graphs(model.graph)
        for node in g.node
        if node.op_type not in CONTROL_FLOW and hot & (set(node.input) | set(node.output))
    }
    return nodes, peak


def _array_peak(value: np.ndarray) -> tuple[float, bool]:
    """(max |value| over its finite entries, whether any entry is not finite); the value is not empty."""
    finite = np.isfinite(value)
    return (float(np.abs(value[finite]).max()) if finite.any() else 0.0), not bool(finite.all())


def _add_peak(peak: dict[str, float], name: str, top: float, non_finite: bool) -> None:
    """A value with an inf or NaN anywhere peaks at inf; else at its largest magnitude."""
    peak[name] = max(peak.get(name, 0.0), float("inf") if non_finite else top)


class _PeakMaker:
    """Adds the nodes that hand subgraph values' peaks out to the main graph (see _overflow)."""

    def __init__(self, types: dict[str, int], taken: set[str]):
        self.types = types
        self.taken = taken
        self.made: set[str] = set()  # every value added: all float

    def fresh(self, base: str) -> str:
        name = unique_name(base, self.taken)
        self.made.add(name)
        return name

    def scalar(self, name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, FLOAT, [])

    def zero(self, graph_nodes: list) -> str:
        name = self.fresh("peak_zero")
        graph_nodes.append(
            helper.make_node("Constant", [], [name], name=name, value=helper.make_tensor(name, FLOAT, [], [0.0]))
        )
        return name

    def own(self, graph: onnx.GraphProto) -> list[tuple[str, str]]:
        """Peaks of a body's own float values and of its subgraphs', as values of that body."""
        peaks = self.children(graph)
        return peaks + [(value, peak) for value, peak, _ in self.reduce(graph)]

    def reduce(self, graph: onnx.GraphProto, finite: bool = False) -> list[tuple[str, str, str]]:
        """(value, its max |value|, a sentinel) for the float values of the graph's nodes, each reduced
        right after its producer (a probe run in node order then frees every value as a plain run does).

        With finite, the sentinel is ReduceSum(value - value): NaN when any entry is inf or NaN, which
        ReduceMax does not reliably say; else "".
        """
        nodes, found = [], []
        for node in list(graph.node):
            nodes.append(node)
            for out in node.output:
                if self.types.get(out) == FLOAT:
                    magnitude, peak = self.fresh(f"{out}_abs"), self.fresh(f"{out}_peak")
                    nodes.append(helper.make_node("Abs", [out], [magnitude], name=magnitude))
                    nodes.append(helper.make_node("ReduceMax", [magnitude], [peak], name=peak, keepdims=0))
                    sentinel = ""
                    if finite:
                        zero, sentinel = self.fresh(f"{out}_minus_itself"), self.fresh(f"{out}_non_finite")
                        nodes.append(helper.make_node("Sub", [out, out], [zero], name=zero))
                        nodes.append(helper.make_node("ReduceSum", [zero], [sentinel], name=sentinel, keepdims=0))
                    found.append((out, peak, sentinel))
        del graph.node[:]
        graph.node.extend(nodes)
        return found

    def children(self, graph: onnx.GraphProto) -> list[tuple[str, str]]:
        """Peaks handed out by the If/Loop/Scan nodes of this graph, as values of this graph."""
        peaks: list[tuple[str, str]] = []
        before: list = []  # zeros the Loops and Scans start from, put first
        for node in graph.node:
            bodies = dict(subgraphs(node))
            if node.op_type == "If" and not node.domain:
                then, other = bodies["then_branch"], bodies["else_branch"]
                for branch, rest in ((then, other), (other, then)):
                    for value, peak in self.own(branch):
                        branch.output.append(self.scalar(peak))
                        zeros: list = []
                        rest.output.append(self.scalar(self.zero(zeros)))
                        rest.node.extend(zeros)
                        out = self.fresh(f"{value}_peak_out")
                        node.output.append(out)
                        peaks.append((value, out))
            elif node.op_type == "Loop" and not node.domain:
                body = bodies["body"]
                for value, peak in self.own(body):
                    carried = len(node.input) - 2
                    running, updated, out = (self.fresh(f"{value}_peak_{s}") for s in ("in", "max", "out"))
                    body.input.append(self.scalar(running))
                    body.node.append(helper.make_node("Max", [running, peak], [updated], name=updated))
                    _insert(body.output, 1 + carried, self.scalar(updated))
                    node.input.append(self.zero(before))
                    _insert(node.output, carried, out)
                    peaks.append((value, out))
            elif node.op_type == "Scan" and not node.domain and "body" in bodies:
                body = bodies["body"]
                scan_inputs = next(a.i for a in node.attribute if a.name == "num_scan_inputs")
                for value, peak in self.own(body):
                    states = len(node.input) - scan_inputs
                    running, updated, out = (self.fresh(f"{value}_peak_{s}") for s in ("in", "max", "out"))
                    _insert(body.input, states, self.scalar(running))
                    body.node.append(helper.make_node("Max", [running, peak], [updated], name=updated))
                    _insert(body.output, states, self.scalar(updated))
                    _insert(node.input, states, self.zero(before))
                    _insert(node.output, states, out)
                    peaks.append((value, out))
        if before:
            nodes = [*before, *graph.node]
            del graph.node[:]
            graph.node.extend(nodes)
        return peaks


def _insert(repeated, position: int, item) -> None:
    """insert() for protobuf repeated fields (composite ones have none)."""
    if isinstance(item, str):
        items = [*repeated[:position], item, *repeated[position:]]
        del repeated[:]
        repeated.extend(items)
        return
    items = []
    for value in [*repeated[:position], item, *repeated[position:]]:
        copy = type(value)()
        copy.CopyFrom(value)
        items.append(copy)
    del repeated[:]
    for value in items:
        repeated.add().CopyFrom(value)
