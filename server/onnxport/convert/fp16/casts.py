"""fp16: the tensors converted and the Casts placed where a value meets a reader wanting the other type."""

from __future__ import annotations

import warnings

import onnx
from onnx import helper

from onnxport.convert.fp16.plan import _constant_type, _Plan
from onnxport.convert.fp16.rules import FLOAT, FLOAT16, FLOATS, FP16_MAX
from onnxport.convert.graph import graphs, subgraphs, unique_name

# ---------------------------------------------------------------- tensors


def _reader_wants(graph: onnx.GraphProto, plan: _Plan, outputs: list | None) -> dict[str, set]:
    """For each value, the types its readers want: nodes, subgraph boundaries, graph outputs.

    outputs: the types a subgraph's boundary gives its outputs; None for the main graph (the plan's types)."""
    wants: dict[str, set] = {}
    for k, output in enumerate(graph.output):
        wanted = plan.types.get(output.name) if outputs is None else outputs[k]
        wants.setdefault(output.name, set()).add(wanted)
    for node in graph.node:
        if plan._walkable(node):
            boundary = plan.boundary(node)
            for name, wanted in zip(node.input, boundary.inputs):
                wants.setdefault(name, set()).add(wanted)
            for attribute, sub in subgraphs(node):
                for name, inner in _reader_wants(sub, plan, boundary.bodies[attribute][1]).items():
                    wants.setdefault(name, set()).update(inner)
            continue
        for index, name in enumerate(node.input):
            wants.setdefault(name, set()).add(plan.want(node, index))
        for _, sub in subgraphs(node):  # an opaque node's bodies stay as they are
            for name, inner in _reader_wants(sub, plan, [None] * len(sub.output)).items():
                wants.setdefault(name, set()).update(inner)
    return wants


def _convert_tensors(model: onnx.ModelProto, plan: _Plan, float16) -> None:
    """fp16 for the initializers, Constants and Casts to float whose every reader wants fp16."""
    wants = _reader_wants(model.graph, plan, None)
    inputs = {i.name for i in model.graph.input}

    def all_fp16(name: str) -> bool:
        return wants.get(name) == {FLOAT16}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it warns for every value it clips
        for g in graphs(model.graph):
            for tensor in g.initializer:
                if tensor.data_type == FLOAT and tensor.name not in inputs and all_fp16(tensor.name):
                    # max_finite_val: its default 1e4 clips values fp16 holds (up to 65504).
                    float16.convert_tensor_float_to_float16(tensor, max_finite_val=FP16_MAX)
            for node in g.node:
                if node.name in plan.kept or not node.output or not all_fp16(node.output[0]) or node.domain:
                    continue
                if node.op_type == "Cast":
                    to = next(a for a in node.attribute if a.name == "to")
                    if to.i == FLOAT:
                        to.i = FLOAT16
                elif node.op_type in ("Constant", "ConstantOfShape"):
                    for attribute in node.attribute:
                        if attribute.name == "value" and attribute.t.data_type == FLOAT:
                            float16.convert_tensor_float_to_float16(attribute.t, max_finite_val=FP16_MAX)
                    if node.op_type == "ConstantOfShape" and not node.attribute:  # default: fp32 zeros
                        node.attribute.append(
                            helper.make_attribute("value", helper.make_tensor("value", FLOAT16, [1], [0.0]))
                        )


# ---------------------------------------------------------------- Casts


class _Scope:
    """The versions of each value visible in a graph: {type: name}, the produced one first."""

    def __init__(self, parent: _Scope | None):
        self.parent = parent
        self.versions: dict[str, dict[int | None, str]] = {}

    def get(self, name: str) -> dict[int | None, str]:
        outer = self.parent.get(name) if self.parent else {}
        return {**outer, **self.versions.get(name, {})} if name in self.versions else outer

    def add(self, name: str, elem_type: int | None, version: str) -> None:
        self.versions.setdefault(name, {}).setdefault(elem_type, version)


class _Caster:
    """Follows types forward through every graph and adds the Casts where a value meets a reader
    wanting the other float type. A subgraph sees its outer scope's values; its Casts stay inside."""

    def __init__(self, plan: _Plan, taken: set[str]):
        self.plan = plan
        self.taken = taken

    def fresh(self, base: str) -> str:
        return unique_name(base, self.taken)

    def version(self, scope: _Scope, name: str, want: int | None, nodes: list) -> str:
        versions = scope.get(name)
        if not versions:
            return name
        if want not in FLOATS or want in versions:
            return versions.get(want, next(iter(versions.values())))
        source_type, source = next(iter(versions.items()))
        if source_type not in FLOATS:
            return source
        cast = self.fresh(f"{name}_to_{'fp16' if want == FLOAT16 else 'fp32'}")
        nodes.append(helper.make_node("Cast", [source], [cast], name=cast, to=want))
        scope.add(name, want, cast)
        return cast

    def walk(
        self,
        graph: onnx.GraphProto,
        parent: _Scope | None,
        inputs: list | None = None,
        outputs: list | None = None,
        top: bool = False,
    ) -> None:
        scope = _Scope(parent)
        for k, value in enumerate(graph.input):
            tensor = value.type.tensor_type if value.type.HasField("tensor_type") else None
            if tensor is not None and inputs is not None and inputs[k] in FLOATS and tensor.elem_type in FLOATS:
                tensor.elem_type = inputs[k]
            scope.add(value.name, tensor.elem_type if tensor is not None else None, value.name)
        for tensor in graph.initializer:
            scope.add(tensor.name, tensor.data_type, tensor.name)
        declared = {o.name: o.type.tensor_type.elem_type for o in graph.output} if top else {}
        nodes: list = []
        for node in graph.node:
            walkable = self.plan._walkable(node)
            boundary = self.plan.boundary(node) if walkable else None
            for index, name in enumerate(node.input):
                if name:
                    want = boundary.inputs[index] if boundary else self.plan.want(node, index)
                    node.input[index] = self.version(scope, name, want, nodes)
            for attribute, sub in subgraphs(node):
                if boundary:
                    self.walk(sub, scope, *boundary.bodies[attribute])
                else:  # an opaque node's body: fp32 inside, only outer values it reads may need Casts
                    self.walk(sub, scope, None, [None] * len(sub.output))
            nodes.append(node)
            for index, out in enumerate(node.output):
                if not out:
                    continue
                made = boundary.outputs[index] if boundary else self.plan.output_type(node, index)
                if out in declared and made in FLOATS and declared[out] in FLOATS and made != declared[out]:
                    # A graph output keeps its name and fp32 type: the node writes a new name, cast back.
                    node.output[index] = self.fresh(f"{out}_{'fp16' if made == FLOAT16 else 'fp32'}")
                    scope.add(out, made, node.output[index])
                    nodes.append(
                        helper.make_node(
                            "Cast", [node.output[index]], [out], name=self.fresh(f"{out}_cast"), to=declared[out]
                        )
                    )
                    scope.add(out, declared[out], out)
                else:
                    scope.add(out, made, out)
        if not top:
            assert outputs is not None, "a subgraph is walked with its boundary's output types"
            for k, output in enumerate(graph.output):
                if outputs[k] in FLOATS:
                    output.name = self.version(scope, output.name, outputs[k], nodes)
                    if output.type.HasField("tensor_type"):
                        output.type.tensor_type.elem_type = outputs[k]
        del graph.node[:]
        graph.node.extend(nodes)
        # onnxruntime infers the types afresh; stale value_info would contradict them.
        del graph.value_info[:]


def _has_fp16(model: onnx.ModelProto) -> bool:
    for g in graphs(model.graph):
        if any(t.data_type == FLOAT16 for t in g.initializer):
            return True
        for node in g.node:
            if node.op_type == "Cast" and any(a.name == "to" and a.i == FLOAT16 for a in node.attribute):
                return True
            if node.op_type in ("Constant", "ConstantOfShape") and _constant_type(node, None) == FLOAT16:
                return True
    return False
