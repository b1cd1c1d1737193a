"""Getting an fp32 graph ready for onnxruntime.quantization (int8/__init__.py's passes before the quantizer).

Each pass works around one behaviour of onnxruntime.quantization 1.30 that made int8
variants of real models wrong or not int8 at all; the comment on each names it.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnx.version_converter
from onnx import helper, numpy_helper

from onnxport.convert import graph as graph_names
from onnxport.errors import one_line

# Weight inputs that onnxruntime's dynamic quantizer looks up in the node's own graph only
# (ConvInteger.add_bias, LSTMQuant); MatMul and Gather weights it finds in outer graphs too.
LOCAL_WEIGHT_INPUTS = {"Conv": (1,), "LSTM": (1, 2)}
QDQ_MIN_OPSET = 13  # DequantizeLinear's `axis` (per-channel scales) arrived in opset 13
FLOATS = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)


def graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graph and every subgraph (If branches, Loop/Scan bodies), nested ones too."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from graphs(attr.g)
            for sub in attr.graphs:
                yield from graphs(sub)


def all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return all_nodes_under(model.graph)


def all_nodes_under(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    return [n for g in graphs(graph) for n in g.node]


def subgraph_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """Nodes that live inside If/Loop/Scan subgraphs (not the main graph)."""
    return [n for g in list(graphs(model.graph))[1:] for n in g.node]


def default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def constants_to_initializers(model: onnx.ModelProto) -> int:
    """Constant nodes become initializers of the graph they are in (subgraphs too); returns how many.

    onnxruntime's quantizer only treats initializers as weights (`find_by_name(...,
    model.initializer())`): Paddle2ONNX and silero keep every weight in a Constant node, so
    ConvInteger failed ("Expected conv2d_394.w_0 to be an initializer") and QDQ quantized the
    activations around float weights (1.02x fp32). All tensor-valued Constants are converted,
    not only weights: onnxruntime does the same to every Constant when it loads a graph, so
    nothing changes at run time, and shape tensors as initializers help shape inference.
    Sparse constants, and Constants that are graph outputs, stay nodes.
    """
    converted = 0
    model.ir_version = max(model.ir_version, 4)  # IR 3 wanted every initializer listed as an input
    # graphs() hands out each graph before walking its nodes: rewriting a graph's node list
    # here comes before its subgraphs (in the rewritten nodes) are reached.
    for graph in graphs(model.graph):
        outputs = {o.name for o in graph.output}
        kept = []
        for node in graph.node:
            value = _constant_value(node) if node.op_type == "Constant" and node.output[0] not in outputs else None
            if value is None:
                kept.append(node)
                continue
            graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
        if len(kept) < len(graph.node):
            converted += len(graph.node) - len(kept)
            del graph.node[:]
            graph.node.extend(kept)
    return converted


def _constant_value(node: onnx.NodeProto) -> np.ndarray | None:
    for attr in node.attribute:
        if attr.name == "value":
            return numpy_helper.to_array(attr.t)
        if attr.name in ("value_float", "value_floats"):
            return np.asarray(helper.get_attribute_value(attr), dtype=np.float32)
        if attr.name in ("value_int", "value_ints"):
            return np.asarray(helper.get_attribute_value(attr), dtype=np.int64)
    return None  # sparse_value, value_string(s): left as nodes


def localize_outer_weights(model: onnx.ModelProto) -> int:
    """Weights a subgraph reads from an outer graph's initializers move (or are copied) into it.

    With EnableSubgraph, onnxruntime's dynamic quantizer finds outer-scope weights for
    quantize_weight (through `parent`), but ConvInteger.add_bias and LSTMQuant look the
    weight up in the subgraph's own initializers only ("Expected ... to be an initializer",
    vad-web's silero v4). A weight used by one subgraph alone moves there under its name;
    one shared by several graphs is copied under a new name (its int8 copies are stored
    once per graph). Returns the number of weights moved or copied.
    """
    scopes = _scopes(model.graph, [])
    uses: dict[str, list[onnx.GraphProto]] = {}  # outer initializer -> subgraphs reading it as a weight
    owner: dict[str, onnx.GraphProto] = {}
    for graph, ancestors in scopes:
        if not ancestors:
            continue
        local = (
            {i.name for i in graph.initializer}
            | {o for n in graph.node for o in n.output}
            | {i.name for i in graph.input}
        )
        for name in _weight_names(graph) - local:
            for outer in reversed(ancestors):
                init = next((i for i in outer.initializer if i.name == name), None)
                if init is not None:
                    uses.setdefault(name, []).append(graph)
                    owner[name] = outer
                    break
                if name in {o for n in outer.node for o in n.output} | {i.name for i in outer.input}:
                    break  # computed in an outer graph: an activation, nothing to localize
    changed = 0
    for name, readers in uses.items():
        outer = owner[name]
        init = next(i for i in outer.initializer if i.name == name)
        shared = len(readers) > 1 or _read_outside(outer, name, readers)
        for k, graph in enumerate(readers):
            local = onnx.TensorProto()
            local.CopyFrom(init)
            if shared:
                local.name = f"{name}__{k}"
                for node in graph.node:
                    node.input[:] = [local.name if i == name else i for i in node.input]
            graph.initializer.append(local)
            changed += 1
        if not shared:
            outer.initializer.remove(init)
    return changed


def _scopes(graph: onnx.GraphProto, ancestors: list[onnx.GraphProto]):
    yield graph, ancestors
    for node in graph.node:
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                yield from _scopes(sub, [*ancestors, graph])


def _weight_names(graph: onnx.GraphProto) -> set[str]:
    return {
        n.input[i]
        for n in graph.node
        for i in LOCAL_WEIGHT_INPUTS.get(n.op_type, ())
        if i < len(n.input) and n.input[i]
    }


def _read_outside(outer: onnx.GraphProto, name: str, readers: list[onnx.GraphProto]) -> bool:
    """Whether `name` is read anywhere under `outer` other than as a weight of the `readers`.

    Counted, not compared by identity: protobuf's Python wrappers of one subgraph differ
    between traversals.
    """
    reads = sum(list(n.input).count(name) for g in graphs(outer) for n in g.node)
    reads += sum(o.name == name for g in graphs(outer) for o in g.output)
    as_weight = sum(
        1
        for g in readers
        for n in g.node
        for i in LOCAL_WEIGHT_INPUTS.get(n.op_type, ())
        if i < len(n.input) and n.input[i] == name
    )
    return reads > as_weight


def upgrade_opset(model: onnx.ModelProto, target: int = QDQ_MIN_OPSET) -> tuple[onnx.ModelProto, str | None]:
    """onnx.version_converter to `target` when the default-domain opset is older.

    onnxruntime's QDQ quantizer writes per-channel DequantizeLinear with `axis`, which only
    exists from opset 13, without raising the opset itself (update_opset_version bumps <10 to
    11 only): opset 9-12 models failed the checker ("Unrecognized attribute: axis for operator
    DequantizeLinear"). Returns (model, None) when upgraded and checked (onnx.checker and an
    onnxruntime session), else (the model unchanged, why not).
    """
    opset = default_opset(model)
    if opset >= target:
        return model, None
    try:
        upgraded = onnx.version_converter.convert_version(model, target)
        onnx.checker.check_model(upgraded)
        _load_in_onnxruntime(upgraded)
    except Exception as exc:
        return model, f"opset {opset} -> {target} failed: {_first_line(exc)}"
    return upgraded, None


def _load_in_onnxruntime(model: onnx.ModelProto) -> None:
    from onnxport import runtime

    runtime.check_loads(model.SerializeToString())


def preprocess(model: onnx.ModelProto, tmp: Path) -> tuple[onnx.ModelProto, list[str]]:
    """quant_pre_process's steps one by one; returns the steps skipped and why.

    The steps are quant_pre_process's (onnxruntime/quantization/shape_inference.py):
    Upsample -> Resize and opset 11 for opset <= 10, symbolic shape inference, onnxruntime's
    basic graph optimization (Conv+BatchNormalization fusion, constant folding...), onnx
    shape inference. It is not called itself because with skip_symbolic_shape=True it
    saves the model it loaded instead of the optimized one (onnxruntime 1.30), and symbolic
    shape inference fails on Paddle graphs and on silero's If subgraphs ("Incomplete
    symbolic shape inference", AssertionError): the Paddle models' BatchNormalizations
    stayed unfused. Here a step that fails is skipped and named; the result must load in
    onnxruntime, or the model goes on as it came (the quantizer infers shapes itself).
    """
    from onnxruntime.quantization.quant_utils import add_pre_process_metadata
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    skipped: list[str] = []
    work = copy.deepcopy(model)
    if default_opset(work) <= 10:
        from onnxruntime.quantization.fusions import ReplaceUpsampleWithResize
        from onnxruntime.quantization.onnx_model import ONNXModel

        ReplaceUpsampleWithResize(ONNXModel(work), default_opset(work)).apply()
        work = onnx.version_converter.convert_version(work, 11)
    steps = [
        ("symbolic shape inference", lambda m: SymbolicShapeInference.infer_shapes(m, 2**31 - 1, False, False, 0)),
        ("onnxruntime optimization", lambda m: _optimized(m, tmp)),
        ("onnx shape inference", onnx.shape_inference.infer_shapes),
    ]
    # Symbolic shape inference writes scratch files into the working folder: keep them in tmp.
    with contextlib.chdir(tmp):
        for label, step in steps:
            try:
                result = step(work)
                if result is None:
                    raise ValueError("no model returned")
                work = result
            except Exception as exc:
                skipped.append(f"{label} skipped ({_first_line(exc)})")
    try:
        _load_in_onnxruntime(work)
    except Exception as exc:
        return model, [f"not used: the pre-processed model does not load ({_first_line(exc)})"]
    add_pre_process_metadata(work)
    graph_names.name_nodes(work.graph)  # the optimizer adds unnamed nodes; nodes_to_exclude needs names
    return work, skipped


def _optimized(model: onnx.ModelProto, tmp: Path) -> onnx.ModelProto:
    from onnxport import runtime

    target = tmp / "optimized.onnx"
    runtime.save_optimized(model.SerializeToString(), target, "basic")
    return onnx.load(target)


def _first_line(exc: Exception) -> str:
    """The error's type and whole message on one line: a cut one ended mid-sentence."""
    return f"{type(exc).__name__}: {one_line(str(exc))}".rstrip(": ")
