"""fp16: the values (in every graph) that overflow what fp16 holds safely, found on real inputs."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from onnxport import runtime
from onnxport.convert.fp16_plan import _value_types
from onnxport.convert.fp16_rules import CONTROL_FLOW, FLOAT, FP16_SAFE
from onnxport.convert.graph import graphs, subgraphs, unique_name, value_names
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
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    initializers = {i.name for i in model.graph.initializer}
    main = [v.name for v in model.graph.input if types.get(v.name) == FLOAT and v.name not in initializers]
    main += [name for n in model.graph.node for name in n.output if types.get(name) == FLOAT]
    peaks = dict(_PeakMaker(types, value_names(probe.graph)).children(probe.graph))  # value -> peak
    existing = {o.name for o in probe.graph.output}
    for name in [*sorted(set(main) - existing), *peaks.values()]:
        probe.graph.output.append(helper.make_tensor_value_info(name, FLOAT, None))
    session = runtime.create_session(probe.SerializeToString(), label="fp16 overflow probe")
    wanted = [*main, *peaks.values()]
    inputs = {i.name for i in session.get_inputs()}
    peak: dict[str, float] = {}
    for feed in feeds:
        got = runtime.run_outputs(session, wanted, {k: v for k, v in feed.items() if k in inputs},
                                  label="fp16 overflow probe")
        for name in main:
            value = got[name]
            if value.size and value.dtype.kind == "f":
                top = float(np.abs(value[np.isfinite(value)]).max()) if np.isfinite(value).any() else 0.0
                peak[name] = max(peak.get(name, 0.0), top if np.isfinite(value).all() else float("inf"))
        for name, out in peaks.items():
            top = float(got[out])  # -inf: the value was empty
            if np.isnan(top) or top > 0:
                peak[name] = max(peak.get(name, 0.0), float("inf") if np.isnan(top) else top)
    hot = {name for name, top in peak.items() if top > FP16_SAFE}
    nodes = {
        node.name for g in graphs(model.graph) for node in g.node
        if node.op_type not in CONTROL_FLOW and hot & (set(node.input) | set(node.output))
    }
    return nodes, peak


class _PeakMaker:
    """Adds the nodes that hand subgraph values' peaks out to the main graph (see _overflow)."""

    def __init__(self, types: dict[str, int], taken: set[str]):
        self.types = types
        self.taken = taken

    def fresh(self, base: str) -> str:
        return unique_name(base, self.taken)

    def scalar(self, name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, FLOAT, [])

    def zero(self, graph_nodes: list) -> str:
        name = self.fresh("peak_zero")
        graph_nodes.append(helper.make_node("Constant", [], [name], name=name,
                                            value=helper.make_tensor(name, FLOAT, [], [0.0])))
        return name

    def own(self, graph: onnx.GraphProto) -> list[tuple[str, str]]:
        """Peaks of a body's own float values and of its subgraphs', as values of that body."""
        peaks = self.children(graph)
        for node in list(graph.node):
            for out in node.output:
                if self.types.get(out) == FLOAT:
                    magnitude, peak = self.fresh(f"{out}_abs"), self.fresh(f"{out}_peak")
                    graph.node.append(helper.make_node("Abs", [out], [magnitude], name=magnitude))
                    graph.node.append(helper.make_node("ReduceMax", [magnitude], [peak], name=peak, keepdims=0))
                    peaks.append((out, peak))
        return peaks

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
