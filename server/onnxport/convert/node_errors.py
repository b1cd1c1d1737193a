"""Which nodes does a variant hurt? The error each fp32 node's outputs gain in the variant.

Both models run with every intermediate value exposed as an output; a value's error is its relative
L2 error ||variant - fp32|| / ||fp32||, and a node's gain is the error of its outputs
minus the worst error already on its inputs. The fallback search keeps the top of that list in float.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from onnxport import runtime
from onnxport.recipe import Feeds


def debug_model(model: onnx.ModelProto, only: set[str] | None = None) -> onnx.ModelProto:
    """The model with every main-graph node output (or those in `only`) as a graph output.

    Untyped where inference cannot tell: onnxruntime works the type out itself.
    """
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in [*inferred.graph.value_info, *inferred.graph.output]}
    debug = onnx.ModelProto()
    debug.CopyFrom(model)
    existing = {o.name for o in debug.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in existing and (only is None or name in only):
                if types.get(name):
                    debug.graph.output.append(helper.make_tensor_value_info(name, types[name], None))
                else:
                    debug.graph.output.append(onnx.ValueInfoProto(name=name))
                existing.add(name)
    return debug


def introduced_errors(fp32: onnx.ModelProto, variant: onnx.ModelProto, feeds: list[Feeds],
                      candidates: set[str] | None = None) -> list[tuple[str, float]]:
    """(fp32 node name, error gain), worst first, for nodes whose outputs the variant still names.

    With candidates (the nodes a converter changes), a gain seen after a value the variant renamed
    (a quantized Conv's output becomes ConvInteger's) goes to the candidate upstream of it.
    """
    produced = {name for node in variant.graph.node for name in node.output}
    shared = {name for node in fp32.graph.node for name in node.output if name in produced}
    reference = _values(debug_model(fp32, shared), feeds, "fp32 intermediate values")
    got = _values(debug_model(variant, shared), feeds, "variant intermediate values")
    error = {name: _scaled_error(reference[name], got[name]) for name in reference if name in got}
    extra = _activation_errors(fp32, variant, feeds, candidates) if candidates is not None else {}
    gains = []
    for node in fp32.graph.node:
        out = [error[name] for name in node.output if name in error]
        if not out or not node.name:
            continue
        before = max((error.get(name, 0.0) for name in node.input), default=0.0)
        gains.append((node.name, max(out) - before))
    gains = [g for g in gains if g[1] > 0]
    if candidates is not None:
        gains = _to_candidates(fp32, gains, candidates, set(error))
        merged = dict(gains)
        for node, gain in extra.items():
            merged[node] = max(merged.get(node, 0.0), gain)
        gains = list(merged.items())
    return sorted(gains, key=lambda g: -g[1])


def _activation_errors(fp32: onnx.ModelProto, variant: onnx.ModelProto, feeds: list[Feeds],
                       candidates: set[str]) -> dict[str, float]:
    """QDQ variants: the error each activation's quantization adds (DequantizeLinear(QuantizeLinear(x))
    against the variant's own x), charged to the candidate nodes that read x: keeping them in float
    removes that Q/DQ.

    The same measure as onnxruntime's qdq_loss_debug, relative L2 (its SQNR, inverted). Against the
    variant's x, not fp32's: fp32's would add the error already upstream, which is large deep in a
    network (minilm: 0.4 for every layer 3-5 MatMul), and hide which quantization is the bad one.
    """
    producer = {out: n for n in variant.graph.node for out in n.output}
    fp32_values = {out for n in fp32.graph.node for out in n.output} | {i.name for i in fp32.graph.input}
    pairs = {}
    for node in variant.graph.node:
        source = producer.get(node.input[0]) if node.op_type == "DequantizeLinear" else None
        if source is not None and source.op_type == "QuantizeLinear" and source.input[0] in fp32_values:
            pairs[node.output[0]] = source.input[0]
    if not pairs:
        return {}
    got = _values(debug_model(variant, set(pairs) | set(pairs.values())), feeds, "quantized activations")
    consumers: dict[str, list[str]] = {}
    for node in fp32.graph.node:
        for name in node.input:
            if node.name in candidates:
                consumers.setdefault(name, []).append(node.name)
    charged: dict[str, float] = {}
    for dq, x in pairs.items():
        if x in got and dq in got:
            error = _scaled_error(got[x], got[dq])
            for node in consumers.get(x, []):
                charged[node] = max(charged.get(node, 0.0), error)
    return charged


def _to_candidates(fp32: onnx.ModelProto, gains: list[tuple[str, float]], candidates: set[str],
                   measured: set[str]) -> list[tuple[str, float]]:
    nodes = {n.name: n for n in fp32.graph.node}
    producer = {out: n for n in fp32.graph.node for out in n.output}
    best: dict[str, float] = {}
    for name, gain in gains:
        for owner in _upstream_candidates(nodes[name], producer, candidates, measured):
            best[owner] = max(best.get(owner, 0.0), gain)
    return list(best.items())


def _upstream_candidates(node, producer, candidates: set[str], measured: set[str], depth: int = 8) -> set[str]:
    if node.name in candidates:
        return {node.name}
    found: set[str] = set()
    if depth == 0:
        return found
    for value in node.input:
        source = producer.get(value)
        # Only through values the variant renamed: a measured value's error was already judged.
        if source is not None and (value not in measured or source.name in candidates):
            found |= _upstream_candidates(source, producer, candidates, measured, depth - 1)
    return found


def _values(model: onnx.ModelProto, feeds: list[Feeds], label: str) -> dict[str, np.ndarray]:
    session = runtime.create_session(model.SerializeToString(), label=label)
    merged: dict[str, list[np.ndarray]] = {}
    for feed in feeds:
        for name, value in runtime.run(session, feed, label=label).items():
            merged.setdefault(name, []).append(np.asarray(value))
    return {name: np.concatenate([v.reshape(-1) for v in values]) for name, values in merged.items()}


def _scaled_error(expected: np.ndarray, got: np.ndarray) -> float:
    if expected.shape != got.shape:
        return float("inf")
    if expected.dtype.kind not in "fc":  # integer values (shapes, indices): right or wrong
        return 0.0 if np.array_equal(expected, got) else 1.0
    e, g = expected.astype(np.float64), got.astype(np.float64)
    finite = np.isfinite(e)
    if not finite.any():
        return 0.0
    with np.errstate(invalid="ignore"):
        diff = e - g
    if not np.isfinite(diff[finite]).all():
        return float("inf")
    # Relative L2 error: a value with outliers loses its small entries to quantization, which a
    # max-scaled error hides (the step is max/255 everywhere).
    return float(np.linalg.norm(diff[finite]) / max(float(np.linalg.norm(e[finite])), 1e-12))
