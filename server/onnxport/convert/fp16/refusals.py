"""fp16: what onnxruntime refuses in an fp16 variant, learned from its error, kept in float next time.

An fp16 variant can fail to load or run where fp32 runs: a node onnxruntime rejects in fp16, or a
node whose parameters fp16 rounded out of what its kernel accepts. A cubic Resize whose scales are
computed from constants gets 100 x 0.01 = 1 in fp32 and 0.9995 in fp16, and onnxruntime refuses the
model: "ScalesValidation 'Cubic' mode only supports: ... 4-D inputs with the corresponding outermost
2 scale values being 1 ... in the Resize operator". The message names a node (`Name:'resize'`) or an
operator (`in the Resize operator`); no list of such operators is kept here, the error says which.

What is kept next (keep_more), in this order, the first step that adds a node:
  1. the named nodes (every node of a named operator), unless they are kept in float already;
  2. the nodes computing their parameters in fp16: inputs computed from constants and from values
     kept in fp32 alone (a Resize's scales from constants, which onnxruntime folds at load, or from a
     size kept in fp32); fp16 saves next to nothing there, and its rounding is what a kernel refuses;
  3. their neighbours: the nodes producing their inputs and reading their outputs.
The build converts again after each step, at most MAX_TRIES times (variant_maker._attempt).
"""

from __future__ import annotations

import re

import onnx

from onnxport.convert.graph import all_nodes, copy_model, graphs, name_nodes, subgraphs
from onnxport.repository.variant_record import Refusal, Settings

MAX_TRIES = 4

# How onnxruntime 1.30 names a node or an operator in its load and run errors.
_NODE_NAMES = (
    re.compile(r"Name:'([^']+)'"),  # "Non-zero status code returned while running Resize node. Name:'up' ..."
    re.compile(r"node with name '([^']+)'"),  # "Could not find an implementation for Resize(19) node with name 'up'"
    re.compile(r"Node \(([^)]+)\) Op \("),  # "Node (up) Op (Resize) [ShapeInferenceError] ..."
)
_OPERATORS = (
    re.compile(r"running (\w+) node"),
    re.compile(r"in the (\w+) operator"),  # kernel constructors' checks (upsamplebase.h: "in the Resize operator")
    re.compile(r"implementation for (\w+)\("),
    re.compile(r"Op \((\w+)\)"),
)


def named(message: str) -> tuple[set[str], set[str]]:
    """(node names, operator types) an onnxruntime error names."""
    nodes = {m for pattern in _NODE_NAMES for m in pattern.findall(message)}
    operators = {m for pattern in _OPERATORS for m in pattern.findall(message)}
    return nodes, operators


def node_names(model: onnx.ModelProto) -> set[str]:
    """The names keep_float accepts for `model` (the fp32 one): its nodes' as make_fp16 names them."""
    work = copy_model(model)
    name_nodes(work.graph)
    return {n.name for n in all_nodes(work.graph)}


def keep_more(variant: onnx.ModelProto, settings: Settings, message: str, valid: set[str]) -> set[str]:
    """The nodes to keep in float next, learned from onnxruntime's `message` about `variant` (the
    refused fp16 model, made with `settings`); empty when the message names nothing to act on.
    valid: the names keep_float accepts (node_names of the fp32 model); the Casts make_fp16 added
    are not among them, and stand for the nodes on either side of them."""
    names, operators = named(message)
    nodes = list(all_nodes(variant.graph))
    producer = {out: n for n in nodes for out in n.output if out}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in nodes:
        for value in n.input:
            readers.setdefault(value, []).append(n)
    blocked_nodes, blocked_ops = set(settings.get("blocked_nodes", ())), set(settings.get("blocked_ops", ()))

    def kept(node: onnx.NodeProto) -> bool:
        return node.name in blocked_nodes or node.op_type in blocked_ops

    def neighbours(node: onnx.NodeProto) -> list[onnx.NodeProto]:
        """The nodes on either side of `node`, looking through added Casts to the model's own."""
        found: list[onnx.NodeProto] = []
        todo, seen = [node], {id(node)}
        while todo:
            current = todo.pop()
            around = [producer[v] for v in current.input if v in producer]
            around += [r for v in current.output for r in readers.get(v, [])]
            for other in around:
                if id(other) in seen:
                    continue
                seen.add(id(other))
                (found if other.name in valid else todo).append(other)
        return found

    # A node named is the one refused; its operator is named too ("running Resize node. Name:'up'"), but
    # only a message naming no node (a kernel's check at load) stands for every node of the operator.
    chosen = [n for n in nodes if n.name in names] or [n for n in nodes if n.op_type in operators]
    targets = [t for node in chosen for t in ([node] if node.name in valid else neighbours(node))]
    step1 = {t.name for t in targets if not kept(t)}
    if step1:
        return step1
    parameters = _parameters(nodes, kept, variant)
    step2 = {n.name for t in targets for n in _upstream(t, producer, parameters, kept) if n.name in valid}
    if step2:
        return step2
    return {n.name for t in targets for n in neighbours(t) if not kept(n)}


def _parameters(nodes: list[onnx.NodeProto], kept, model: onnx.ModelProto) -> set[str]:
    """Values computed from constants and from values the variant holds in fp32 (kept nodes' outputs)
    alone: a node's parameters (a Resize's scales from a size kept in fp32 for being an integer, or from
    constants, which onnxruntime folds at load). A node holding a subgraph and not kept is not followed."""
    values = {i.name for g in graphs(model.graph) for i in g.initializer}
    values |= {v for n in nodes if kept(n) for v in n.output if v}
    changed = True
    while changed:
        changed = False
        for node in nodes:
            if not node.output or node.output[0] in values or any(True for _ in subgraphs(node)):
                continue
            if all(not v or v in values for v in node.input):
                values.update(v for v in node.output if v)
                changed = True
    return values


def _upstream(
    node: onnx.NodeProto, producer: dict[str, onnx.NodeProto], parameters: set[str], kept
) -> list[onnx.NodeProto]:
    """The nodes in fp16 computing `node`'s parameters, up to the nodes kept in fp32 or the constants."""
    found, todo, seen = [], [v for v in node.input if v in parameters], set()
    while todo:
        source = producer.get(todo.pop())
        if source is None or id(source) in seen or kept(source):
            continue
        seen.add(id(source))
        found.append(source)
        todo += [v for v in source.input if v in parameters]
    return found


def note(refusals: list[Refusal]) -> str:
    """What a variant's reason adds when onnxruntime refused it before: the nodes kept in float for it."""
    if not refusals:
        return ""
    kept = [node for refusal in refusals for node in refusal["kept"]]
    return (
        f" (after {len(refusals)} refusal{'s' if len(refusals) > 1 else ''} by onnxruntime, "
        f"kept in float: {', '.join(kept)})"
    )
