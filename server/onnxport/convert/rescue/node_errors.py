"""Which nodes does a variant hurt? The error each fp32 node's outputs gain in the variant.

Both models run with intermediate values exposed as outputs; a value's error is its relative
L2 error ||variant - fp32|| / ||fp32||, and a node's gain is the error of its outputs
minus the worst error already on its inputs. The fallback search keeps the top of that list in float.

Memory: onnxruntime holds every exposed value at once, and all of a model's values together are
hundreds of times its largest one (a text recognizer: 486 MB of values on one golden set, the
largest 8.4 MB). So the values are exposed a piece at a time (pieces), each piece at most
max(PIECE_FACTOR x the largest value, PIECE_MIN_BYTES) over the feeds, sized by a probe
(value_sizes.py); a piece's values are compared and dropped before the next is run.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

import numpy as np
import onnx
from onnx import helper

from onnxport import runtime
from onnxport.convert.graph import copy_model, unique_name, value_names
from onnxport.convert.rescue import value_sizes
from onnxport.errors import ModelFileError
from onnxport.recipe import Feeds

PIECE_FACTOR = 4
PIECE_MIN_BYTES = 128 * 2**20


def debug_model(
    model: onnx.ModelProto,
    only: set[str] | None = None,
    types: dict[str, int] | None = None,
    observe: AbstractSet[str] = frozenset(),
) -> onnx.ModelProto:
    """The model with every main-graph node output (or those in `only`) as a graph output.

    Untyped where inference cannot tell: onnxruntime works the type out itself. types: the model's
    value types (value_sizes.tensor_types), when the caller has them already.

    observe: values to keep as they are when exposed without holding them: each gets a Size reader
    right after its producer, whose scalar is a graph output (named "<value>_observed..."). onnxruntime
    fuses a node into the next only when nothing else reads its output (Conv+Relu, MatMul+Add, QDQ
    into QLinearConv), so a value exposed in one piece and not in another would be computed by other
    kernels; observed, every shared value is computed as when all were exposed at once. Run such a
    model in node order (runtime.create_session in_node_order) so each value is freed after its Size.
    """
    if types is None:
        types = value_sizes.tensor_types(model)
    debug = copy_model(model)
    existing = {o.name for o in debug.graph.output}
    taken = value_names(debug.graph) if observe else set()
    nodes = []
    for node in debug.graph.node:
        nodes.append(node)
        for name in node.output:
            if name and name not in existing and (only is None or name in only):
                if types.get(name):
                    debug.graph.output.append(helper.make_tensor_value_info(name, types[name], None))
                else:
                    debug.graph.output.append(onnx.ValueInfoProto(name=name))
                existing.add(name)
            elif name and name in observe and name not in existing:
                size = unique_name(f"{name}_observed", taken)
                nodes.append(helper.make_node("Size", [name], [size], name=size))
                debug.graph.output.append(helper.make_tensor_value_info(size, onnx.TensorProto.INT64, []))
    if observe:
        del debug.graph.node[:]
        debug.graph.node.extend(nodes)
    return debug


def introduced_errors(
    fp32: onnx.ModelProto, variant: onnx.ModelProto, feeds: list[Feeds], candidates: set[str] | None = None
) -> list[tuple[str, float]]:
    """(fp32 node name, error gain), worst first, for nodes whose outputs the variant still names.

    With candidates (the nodes a converter changes), a gain seen after a value the variant renamed
    (a quantized Conv's output becomes ConvInteger's) goes to the candidate upstream of it.
    """
    produced = {name for node in variant.graph.node for name in node.output}
    shared = {name for node in fp32.graph.node for name in node.output if name in produced}
    fp32_types, variant_types = value_sizes.tensor_types(fp32), value_sizes.tensor_types(variant)
    sizes = _sizes(fp32, feeds, fp32_types)
    error: dict[str, float] = {}
    outputs = {o.name for o in fp32.graph.output} | {o.name for o in variant.graph.output}
    pieces = _pieces([n for node in fp32.graph.node for n in node.output if n in shared], sizes)
    # In pieces, the other shared values are observed (see debug_model): int8 rankings come out the
    # same as all at once; fp16 ones move a little (onnxruntime drops a Cast pair around a kernel with
    # no fp16 version unless the fp16 value is a graph output, which no reader can stand in for).
    observe = shared if len(pieces) > 1 else frozenset()
    for piece in pieces:
        keep = piece | outputs
        reference = _values(debug_model(fp32, piece, fp32_types, observe), feeds, "fp32 intermediate values", keep)
        got = _values(debug_model(variant, piece, variant_types, observe), feeds, "variant intermediate values", keep)
        error.update({name: _scaled_error(reference[name], got[name]) for name in reference if name in got})
        del reference, got  # before the next piece runs
    extra = _activation_errors(fp32, variant, feeds, candidates, sizes) if candidates is not None else {}
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


def _sizes(model: onnx.ModelProto, feeds: list[Feeds], types: dict[str, int]) -> dict[str, int]:
    """Bytes of each main-graph value over all the feeds (what one exposure of it holds), inputs included;
    empty when the probe cannot run (then everything is one piece, as before pieces)."""
    try:
        per_feed = value_sizes.value_bytes(model, feeds, types=types)
    except ModelFileError:
        return {}
    total: dict[str, int] = {}
    for sizes, feed in zip(per_feed, feeds):
        for name, size in [*sizes.items(), *((k, int(v.nbytes)) for k, v in feed.items())]:
            total[name] = total.get(name, 0) + size
    return total


def _pieces(names: list[str], sizes: dict[str, int], weight: int = 1) -> list[set[str]]:
    """names cut in graph order into pieces of at most max(PIECE_FACTOR x the largest, PIECE_MIN_BYTES)
    bytes (weight: how many values of that size each name stands for). A value of unknown size counts as
    the largest; with no sizes at all, one piece."""
    if not sizes or not names:
        return [set(names)]  # one run, as before pieces (with no names it still measures the outputs)
    largest = max(sizes.values(), default=0) * weight
    budget = max(PIECE_FACTOR * largest, PIECE_MIN_BYTES)
    if sum(sizes.get(name, largest // weight) * weight for name in set(names)) <= budget:
        return [set(names)]  # all at once, as before pieces
    pieces: list[set[str]] = []
    current: set[str] = set()
    held = 0
    for name in dict.fromkeys(names):
        size = sizes.get(name, largest // weight) * weight
        if current and held + size > budget:
            pieces.append(current)
            current, held = set(), 0
        current.add(name)
        held += size
    if current:
        pieces.append(current)
    return pieces


def _activation_errors(
    fp32: onnx.ModelProto, variant: onnx.ModelProto, feeds: list[Feeds], candidates: set[str], sizes: dict[str, int]
) -> dict[str, float]:
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
    consumers: dict[str, list[str]] = {}
    for node in fp32.graph.node:
        for name in node.input:
            if node.name in candidates:
                consumers.setdefault(name, []).append(node.name)
    types = value_sizes.tensor_types(variant)
    # A pair holds x and its DequantizeLinear(QuantizeLinear(x)), of x's size: pieces by x.
    by_x: dict[str, list[str]] = {}
    for dq, x in pairs.items():
        by_x.setdefault(x, []).append(dq)
    charged: dict[str, float] = {}
    pieces = _pieces(list(by_x), sizes, weight=2)
    for piece in pieces:
        wanted = {dq for x in piece for dq in by_x[x]}
        observed = set(pairs) | set(pairs.values()) if len(pieces) > 1 else frozenset()
        got = _values(
            debug_model(variant, piece | wanted, types, observed),
            feeds,
            "quantized activations",
            piece | wanted | {o.name for o in variant.graph.output},
        )
        for dq in wanted:  # a max per node: the order does not matter
            x = pairs[dq]
            if x in got and dq in got:
                error = _scaled_error(got[x], got[dq])
                for node in consumers.get(x, []):
                    charged[node] = max(charged.get(node, 0.0), error)
        del got
    return charged


def _to_candidates(
    fp32: onnx.ModelProto, gains: list[tuple[str, float]], candidates: set[str], measured: set[str]
) -> list[tuple[str, float]]:
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


def _values(model: onnx.ModelProto, feeds: list[Feeds], label: str, keep: set[str]) -> dict[str, np.ndarray]:
    """The outputs named in keep, each over all the feeds (flattened and concatenated)."""
    session = runtime.create_session(model.SerializeToString(), label=label, in_node_order=True)
    merged: dict[str, list[np.ndarray]] = {}
    for feed in feeds:
        for name, value in runtime.run(session, feed, label=label).items():
            if name in keep:
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
