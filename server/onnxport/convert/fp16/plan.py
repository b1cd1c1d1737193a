"""fp16: which node computes in what type, decided once for every graph and boundary."""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx
from onnx import helper

from onnxport.convert.fp16.rules import (
    CONTROL_FLOW,
    DTYPE_FROM_INPUT_OR_ATTRIBUTE,
    FLOAT,
    FLOAT16,
    FLOATS,
    MOVEMENT_OPS,
    QUANTIZED_OPS,
    ROUNDING_OPS,
    WIDE_INTEGERS,
)
from onnxport.convert.graph import graphs, subgraphs

# ---------------------------------------------------------------- which node computes in what


@dataclass
class _Boundary:
    """Types across a node that holds subgraphs: what its inputs must be, what its outputs are,
    and for each body attribute (input types, output types); None = leave as it is."""

    inputs: list
    outputs: list
    bodies: dict = field(default_factory=dict)


class _Plan:
    """What each node computes in: the fp32 model's types, and the nodes kept in fp32."""

    def __init__(self, model: onnx.ModelProto, op_block: set[str], hot_values: set[str]):
        self.op_block = op_block
        self.hot = hot_values
        self.opsets = {(o.domain or "ai.onnx"): o.version for o in model.opset_import}
        self.types, self.non_tensors = _value_types(model)
        self.kept: set[str] = set()  # every node name computing in fp32 but those blocked by op type
        self._schemas: dict = {}
        self._graphs = list(graphs(model.graph))
        # A node whose schema ONNX does not know (custom domains), that reads or makes sequences,
        # or holds subgraphs other than If/Loop/Scan-9+ bodies: its dtypes cannot be followed.
        for g in graphs(model.graph):
            for node in g.node:
                opaque = (
                    self.schema(node) is None
                    or node.op_type in DTYPE_FROM_INPUT_OR_ATTRIBUTE
                    or any(name in self.non_tensors for name in [*node.input, *node.output])
                    or (any(True for _ in subgraphs(node)) and not self._walkable(node))
                )
                if opaque:
                    self._keep_node(node)

    def keep(self, names: set[str]) -> None:
        for g in self._graphs:
            for node in g.node:
                if node.name in names:
                    self._keep_node(node)

    def follow(self) -> None:
        """Keep in fp32 the MOVEMENT_OPS whose float inputs all come from nodes kept in fp32."""
        producers = {out: n for g in self._graphs for n in g.node for out in n.output}
        changed = True
        while changed:
            changed = False
            for g in self._graphs:
                for node in g.node:
                    if node.op_type not in MOVEMENT_OPS or node.domain or self.keeps(node):
                        continue
                    floats = [i for i in node.input if self.types.get(i) == FLOAT]
                    if floats and all(i in producers and self.keeps(producers[i]) for i in floats):
                        self._keep_node(node)
                        changed = True

    def _keep_node(self, node: onnx.NodeProto) -> None:
        # A kept If, Loop or Scan keeps everything inside it.
        self.kept.add(node.name)
        for _, sub in subgraphs(node):
            for g in graphs(sub):
                self.kept.update(n.name for n in g.node)

    def keeps(self, node: onnx.NodeProto) -> bool:
        return node.name in self.kept or node.op_type in self.op_block

    def schema(self, node: onnx.NodeProto):
        key = (node.domain or "ai.onnx", node.op_type)
        if key not in self._schemas:
            try:
                self._schemas[key] = onnx.defs.get_schema(node.op_type, self.opsets.get(key[0], 1), node.domain)
            except onnx.defs.SchemaError:  # a custom domain (com.microsoft) or an unknown operator
                self._schemas[key] = None
        return self._schemas[key]

    def _walkable(self, node: onnx.NodeProto) -> bool:
        return (
            node.op_type in CONTROL_FLOW
            and not node.domain
            and not (
                node.op_type == "Scan" and self.opsets.get("ai.onnx", 1) < 9  # Scan-8 has sequence_lens first
            )
        )

    def _formal(self, node: onnx.NodeProto, index: int, outputs: bool):
        schema = self.schema(node)
        formals = schema.outputs if outputs else schema.inputs
        if not formals:
            return None, ()
        formal = formals[min(index, len(formals) - 1)]
        allowed = next(
            (c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == formal.type_str),
            [formal.type_str],
        )
        return formal.type_str, allowed

    def want(self, node: onnx.NodeProto, index: int) -> int | None:
        """The type input `index` must have: None when any will do or it is not float."""
        name = node.input[index]
        if not name or node.op_type == "Cast":
            return None
        original = self.types.get(name)
        if original != FLOAT:
            return original
        if self.keeps(node):
            return FLOAT
        _, allowed = self._formal(node, index, outputs=False)
        return FLOAT16 if "tensor(float16)" in allowed else FLOAT  # e.g. Resize's scales stay fp32

    def output_type(self, node: onnx.NodeProto, index: int) -> int | None:
        name = node.output[index]
        if node.op_type == "Cast":
            return helper.get_attribute_value(next(a for a in node.attribute if a.name == "to"))
        if node.op_type in ("Constant", "ConstantOfShape") and not node.domain:
            return _constant_type(node, self.types.get(name))
        original = self.types.get(name)
        if original != FLOAT or self.keeps(node):
            return original
        # fp16 only where the schema ties the output's type to the (converted) inputs' types.
        type_str, allowed = self._formal(node, index, outputs=True)
        schema = self.schema(node)
        tied = any(formal.type_str == type_str for formal in schema.inputs)
        return FLOAT16 if tied and "tensor(float16)" in allowed else original

    def boundary(self, node: onnx.NodeProto) -> _Boundary:
        """Types across an If, Loop or Scan: fp16 inside and out where the fp32 model has fp32,
        unless the node is kept or a value crossing there overflows fp16."""
        bodies = dict(subgraphs(node))
        keeps = self.keeps(node)

        def decide(*names: str) -> int | None:
            original = next((self.types[n] for n in names if n in self.types), None)
            if original == FLOAT and not keeps and not self.hot & set(names):
                return FLOAT16
            return original

        if node.op_type == "If":
            then, other = bodies["then_branch"], bodies["else_branch"]
            outs = [decide(o, then.output[k].name, other.output[k].name) for k, o in enumerate(node.output)]
            return _Boundary([None], outs, {"then_branch": ([], outs), "else_branch": ([], outs)})
        body = bodies["body"]
        if node.op_type == "Loop":
            carried = len(node.input) - 2
            states = [
                decide(node.input[2 + i], body.input[2 + i].name, body.output[1 + i].name, node.output[i])
                for i in range(carried)
            ]
            scans = [decide(body.output[1 + carried + j].name, o) for j, o in enumerate(node.output[carried:])]
            fixed = [self.types.get(v.name) for v in body.input[:2]]
            return _Boundary(
                [None, None, *states],
                [*states, *scans],
                {"body": ([*fixed, *states], [self.types.get(body.output[0].name), *states, *scans])},
            )
        scan_inputs = next(a.i for a in node.attribute if a.name == "num_scan_inputs")
        count = len(node.input) - scan_inputs
        states = [decide(node.input[i], body.input[i].name, body.output[i].name, node.output[i]) for i in range(count)]
        slices = [decide(node.input[count + m], body.input[count + m].name) for m in range(scan_inputs)]
        scans = [decide(body.output[count + k].name, o) for k, o in enumerate(node.output[count:])]
        return _Boundary([*states, *slices], [*states, *scans], {"body": ([*states, *slices], [*states, *scans])})


def _constant_type(node: onnx.NodeProto, default: int | None) -> int | None:
    for attribute in node.attribute:
        if attribute.name == "value" and attribute.type == onnx.AttributeProto.TENSOR:
            return attribute.t.data_type
        if attribute.name in ("value_float", "value_floats"):
            return FLOAT
    return FLOAT if node.op_type == "ConstantOfShape" else default


def _value_types(model: onnx.ModelProto) -> tuple[dict[str, int], set[str]]:
    """Element types of the fp32 model's tensors in every graph; names of its non-tensor values."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types: dict[str, int] = {}
    non_tensors: set[str] = set()
    for g in graphs(inferred.graph):
        for v in [*g.value_info, *g.input, *g.output]:
            if v.type.HasField("tensor_type"):
                if v.type.tensor_type.elem_type:
                    types[v.name] = v.type.tensor_type.elem_type
            elif v.type.WhichOneof("value"):
                non_tensors.add(v.name)
        types.update({i.name: i.data_type for i in g.initializer})
        for node in g.node:
            if node.op_type in ("Constant", "ConstantOfShape") and node.output[0] not in types:
                constant = _constant_type(node, None)
                if constant:
                    types[node.output[0]] = constant
    return types, non_tensors


def _readers(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    """The nodes of this graph and its subgraphs reading each value (outer-scope reads included)."""
    readers: dict[str, list[onnx.NodeProto]] = {}
    for g in graphs(graph):
        for node in g.node:
            for name in node.input:
                readers.setdefault(name, []).append(node)
    return readers


def _producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {out: node for g in graphs(graph) for node in g.node for out in node.output}


def _integer_nodes(model: onnx.ModelProto, plan: _Plan, peaks: dict[str, float]) -> set[str]:
    """Nodes computing integers in float: kept fp32, fp16 holds integers exactly only up to 2048.

    Two ends of such arithmetic. A float cast from a wide integer that is a size (it comes from
    Shape or Size: it grows with the input) or went past 2048 on the feeds (an int32 accumulator
    of ConvInteger/MatMulInteger) is kept by its readers, and by theirs while they keep integers
    (Add, Floor, Concat, ...; a Mul by a scale does not); a 0/1 mask cast to float is not. A float
    rounded by Floor/Ceil/Round and cast to an integer (a requantized bias, a computed size) is
    kept with the node before the rounding.
    """
    readers, producers = _readers(model.graph), _producers(model.graph)

    def size(name: str, seen: set[str]) -> bool:
        source = producers.get(name)
        if source is None or name in seen or plan.types.get(name) in FLOATS:
            return False
        seen.add(name)
        return source.op_type in ("Shape", "Size") or any(size(i, seen) for i in source.input if i)

    keep: set[str] = set()
    integral = [
        n.output[0]
        for g in graphs(model.graph)
        for n in g.node
        if n.op_type == "Cast"
        and plan.types.get(n.output[0]) == FLOAT
        and plan.types.get(n.input[0]) in WIDE_INTEGERS
        and (peaks.get(n.output[0], 0.0) > 2048 or size(n.input[0], set()))
    ]
    seen = set(integral)
    preserving = {
        "Add",
        "Sub",
        "Neg",
        "Abs",
        "Relu",
        "Max",
        "Min",
        *ROUNDING_OPS,
        "Identity",
        "Reshape",
        "Squeeze",
        "Unsqueeze",
        "Flatten",
        "Concat",
        "Gather",
        "Slice",
        "Expand",
        "Transpose",
    }
    while integral:
        name = integral.pop()
        for node in readers.get(name, []):
            if node.op_type == "Cast":
                continue
            keep.add(node.name)
            if node.op_type in preserving:
                for out in node.output:
                    if plan.types.get(out) == FLOAT and out not in seen:
                        seen.add(out)
                        integral.append(out)
    for g in graphs(model.graph):
        for node in g.node:
            if node.op_type not in ROUNDING_OPS:
                continue
            if any(
                r.op_type == "Cast" and plan.types.get(r.output[0]) not in (FLOAT, FLOAT16, None)
                for r in readers.get(node.output[0], [])
            ):
                keep.add(node.name)
                source = producers.get(node.input[0])
                if source is not None and source.op_type not in ("Constant", "Cast"):
                    keep.add(source.name)
    return keep


def _scale_nodes(model: onnx.ModelProto, plan: _Plan) -> set[str]:
    """Nodes computing with quantization scales: kept fp32.

    A scale from DynamicQuantizeLinear times a weight's scale is ~1e-5, under fp16's smallest
    normal value (6.1e-5): in fp16 it keeps a few bits. A node reading a scale is kept; its output
    is a scale too when all its float inputs are scales or constants (Mul(x_scale, w_scale)).
    """
    readers, producers = _readers(model.graph), _producers(model.graph)
    initializers = {i.name for g in graphs(model.graph) for i in g.initializer}

    def constant(name: str) -> bool:
        source = producers.get(name)
        return name in initializers or (source is not None and source.op_type == "Constant")

    scales = [
        n.output[1]
        for g in graphs(model.graph)
        for n in g.node
        if n.op_type == "DynamicQuantizeLinear" and len(n.output) > 1
    ]
    seen, keep = set(scales), set()
    while scales:
        for node in readers.get(scales.pop(), []):
            if node.op_type in QUANTIZED_OPS or node.op_type == "Cast":
                continue
            keep.add(node.name)
            floats = [i for i in node.input if plan.types.get(i) == FLOAT]
            if all(i in seen or constant(i) for i in floats):
                for out in node.output:
                    if plan.types.get(out) == FLOAT and out not in seen:
                        seen.add(out)
                        scales.append(out)
    return keep
