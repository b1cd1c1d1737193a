"""One variant: convert, run, judge, rescue (its whole model: model_build.py; several models: build_transaction.py).

Made from one model's fp32, run on its golden inputs and judged against the budget; its record goes into the
model's entry.

The budget is that of the arithmetic the file computes (arithmetic.py), not of the variant's name:
an already-int8 model's fp32 variant is judged as int8, and so is its fp16 variant. A variant
outside its budget goes to the fallback search (rescue/fallback.py) before it is rejected.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, cast

import onnx

from onnxport import runtime
from onnxport.accuracy import budgets, measure, reasons
from onnxport.accuracy.measured import Measurement
from onnxport.accuracy.tolerance import Tolerance
from onnxport.convert import forms, lower_precision, reference, variants
from onnxport.convert.arithmetic import arithmetic, operator_types
from onnxport.convert.fp16 import refusals as fp16_refusals
from onnxport.convert.graph import all_nodes
from onnxport.convert.intake.export import serialize
from onnxport.convert.prepared import Prepared
from onnxport.convert.refused import refused_record
from onnxport.convert.rescue import fallback, node_errors
from onnxport.errors import ModelFileError, one_line
from onnxport.recipe import Feeds
from onnxport.repository import variant_table
from onnxport.repository.store import Transaction
from onnxport.repository.variant_record import (
    FailedVariant,
    Fallback,
    Forms,
    MadeVariant,
    OverBudgetVariant,
    Refusal,
    ServedVariant,
    Settings,
    SkippedVariant,
    Speed,
)
from onnxport.repository.variant_record import Variant as VariantRecord
from onnxport.variants import Variant


@dataclass
class _Attempt:
    """One conversion of a variant, run on the golden inputs and judged against its budget."""

    model: onnx.ModelProto
    settings: Settings
    data: bytes
    session: Any
    outputs: list[Feeds]
    vs_fp32: Measurement
    reason: str | None
    arithmetic: str  # what the file computes (arithmetic.py): its budget's key
    budget: Tolerance
    fallback: Fallback | None = None
    learned: tuple[str, ...] = ()  # nodes kept in float because onnxruntime refused the file without (fp16/refusals.py)
    rejection: reasons.Rejection | None = None  # the budget's reason as data, which `reason` words (and may add to)


# An int8 variant must be at least this many times smaller than fp32 to be served: a smaller file
# is what int8 is for (and what its speed comes from); quantizing only activations, or a model whose
# few weights are outweighed by the scales and zero points added, gives a file near fp32's size, or larger.
INT8_MIN_SHRINK = 1.5
# The same rule for fp16, scaled to what fp16 can give: at best it halves a file (int8 at best
# quarters it, and must reach 1.5x). An fp16 file not 1.25x smaller holds most of its weights in fp32
# or was never float to begin with: nodes kept in fp32 for overflow or by the fallback search
# (a corpus model at 0.999x with 12 nodes kept), or an already-int8 model (1.00x). It would bring
# fp16's accuracy cost, and on WebGPU its shader-f16 requirement, for next to no bytes saved.
FP16_MIN_SHRINK = 1.25
MIN_SHRINK = {"fp16": FP16_MIN_SHRINK, "int8": INT8_MIN_SHRINK}


NOT_WORTH_SERVING = "so not worth serving"  # ends every size refusal (the fallback search counts them)


def _not_smaller(name: str, size: int, fp32: onnx.ModelProto, fp32_size: int) -> str:
    """Why a file not enough smaller than the model as built is not served, naming both as they are: the
    model as built is "fp32" only when it computes in fp32 (an already-int8 model's is "the original (int8)")."""
    # What the row calls the file it made: int4 is judged as int8 (its precision) but holds 4-bit weights.
    row = variant_table.variant(name)
    computes = arithmetic(fp32)
    against = "fp32" if computes == "fp32" else f"the original ({computes}) file"
    return (
        f"{row.file_words or row.precision} file {size:,} bytes is {size / fp32_size:.2f}x the size of "
        f"{against} ({fp32_size:,} bytes): not at least {MIN_SHRINK[row.precision]}x smaller, {NOT_WORTH_SERVING}"
    )


# Static int8 fixes every activation's range from its calibration inputs. Seeded noise has
# nothing of the real inputs' ranges: a captcha CRNN reading 0..255 pixels, calibrated on N(0, 1),
# was off from fp32 by up to 12.5 on real images (0.6 calibrated on 20 of them), while the import,
# judging on the same noise, said ok.
SYNTHETIC_CALIBRATION = (
    "no real calibration inputs: static int8 fixes activation ranges from its calibration data, and "
    "seeded random inputs do not have your data's ranges; give real inputs with "
    "`onnxport import MODEL --calibration FILE.npz|FILE.npy|DIR` (or `--inputs FILE.npz|FILE.npy|DIR`, "
    "which also calibrates)"
)


# Above this many nodes (every graph's), a variant outside its budget is rejected without a fallback search.
FALLBACK_MAX_NODES = 10_000

# What the int8 quantizers quantize: the candidates the fallback may keep in float.
INT8_OPS = {"Conv", "ConvTranspose", "MatMul", "Gemm", "Gather", "LSTM", "GRU", "Attention"}


def make_variant(
    prepared: Prepared,
    name: str,
    fp32_run: tuple[Any, list[Feeds]],
    transaction: Transaction,
    fp32_bytes: bytes,
    reference_feeds: tuple[Feeds, int],
) -> VariantRecord:
    """fp32_run: the fp32 session and its golden outputs, made once for validation and reused here;
    reference_feeds: (inputs, rows) of the variant's reference file, from reference.reference_inputs."""
    row = variant_table.variant(name)
    precision = row.precision
    if name not in prepared.variants:
        return {
            "precision": precision,
            "status": "skipped",
            "reason": f"not asked for (--variants {','.join(prepared.variants)})",
        }
    if row.calibration == "real" and prepared.calibration_data == "synthetic":
        return {"precision": precision, "status": "skipped", "reason": _calibration_skip(prepared, name)}
    made = _attempt(prepared, name, fp32_run, fp32_bytes, ())
    if not isinstance(made, _Attempt):
        return made  # skipped, or no file to measure
    if made.reason and name != "fp32":
        made = _rescue(prepared, name, fp32_run, fp32_bytes, made)
    session, outputs = made.session, made.outputs
    try:
        speed = _native_speed(session, prepared.golden_inputs[0])
        reference_record = reference.stage(transaction, prepared.name, name, session, *reference_feeds)
    except ModelFileError as exc:
        if name == "fp32":
            raise
        return refused_record(precision, exc, model=made.model)
    vs_source = measure.against(prepared.source_outputs, outputs, prepared.task, prepared.metric_output)
    # model_build.build adds size_ratio and label; the schema tests hold the whole record to the type.
    record = cast(
        MadeVariant,
        {
            **transaction.put_file(made.data, "onnx"),
            "precision": precision,
            "status": "rejected" if made.reason else "ok",
            "reason": made.reason,
            "arithmetic": made.arithmetic,
            "operators": lower_precision.operator_histogram(made.model),
            "operator_types": operator_types(made.model),
            "vs_fp32": made.vs_fp32,
            "vs_source": vs_source,
            "budget": made.budget.as_json(),
            "judged_on": prepared.golden_data,
            "settings": made.settings,
            "speed": speed,
            "reference": reference_record,
        },
    )
    if made.fallback is not None:
        record["fallback"] = made.fallback
    if made.reason and made.rejection is not None:
        cast(OverBudgetVariant, record)["reason_data"] = made.rejection
    if not made.reason:  # served: its forms (a name of the forms table each)
        cast(ServedVariant, record)["forms"] = cast(
            Forms,
            forms.make_forms(
                prepared, name, made.data, fp32_run[1], outputs, transaction, reference_feeds, run_all, made.arithmetic
            ),
        )
    accuracy = measure.accuracy(prepared.labels, outputs, prepared.metric_output)
    if accuracy is not None:
        record["accuracy"] = accuracy
    return record


def _attempt(
    prepared: Prepared, name: str, fp32_run: tuple[Any, list[Feeds]], fp32_bytes: bytes, keep_float: tuple[str, ...]
) -> _Attempt | FailedVariant | SkippedVariant:
    """The variant converted with keep_float kept in float, or the record of why there is none.

    An fp16 file onnxruntime refuses is made again with what its error names kept in float
    (fp16/refusals.py), up to fp16_refusals.MAX_TRIES times; settings' `refusals` say what was kept and why.
    """
    precision = variant_table.variant(name).precision
    refusals: list[Refusal] = []
    valid: set[str] | None = None  # the names keep_float accepts, read at the first refusal
    while True:
        try:
            model, settings = _convert(prepared, name, keep_float)
        except lower_precision.VariantSkipped as skipped:
            return {"precision": precision, "status": "skipped", "reason": str(skipped) + fp16_refusals.note(refusals)}
        except Exception as exc:  # a converter crash costs this variant, not the whole build
            if name == "fp32":
                raise
            return {
                "precision": precision,
                "status": "rejected",
                "reason": f"conversion failed: {type(exc).__name__}: {one_line(str(exc))}",
            }
        data = fp32_bytes if name == "fp32" else serialize(model)
        if precision in MIN_SHRINK and len(data) * MIN_SHRINK[precision] > len(fp32_bytes):
            return {
                "precision": precision,
                "status": "skipped",
                "reason": _not_smaller(name, len(data), prepared.fp32, len(fp32_bytes)) + fp16_refusals.note(refusals),
            }
        try:
            session, outputs = (
                fp32_run if name == "fp32" else run_all(data, prepared.golden_inputs, f"{prepared.name} {name}")
            )
            break
        except ModelFileError as exc:
            if name == "fp32":
                raise
            more: set[str] = set()
            if precision == "fp16" and len(refusals) < fp16_refusals.MAX_TRIES:
                valid = valid if valid is not None else fp16_refusals.node_names(prepared.fp32)
                more = fp16_refusals.keep_more(model, settings, str(exc), valid)
            if not more:
                return refused_record(precision, exc, fp16_refusals.note(refusals), model)
            refusals.append({"kept": sorted(more), "error": str(exc)})
            keep_float = (*keep_float, *sorted(more))
            del model, data  # the refused file is released before the next is made
    if refusals:
        settings["refusals"] = refusals
    vs_fp32 = measure.against(fp32_run[1], outputs, prepared.task, prepared.metric_output)
    computes = arithmetic(model)
    budget = budgets.budget(computes)
    # Served within less than the budget: other runtimes' results are judged by the budget itself.
    serving = budgets.serving_budget(computes)
    reason = measure.verdict(computes, serving, prepared.task, vs_fp32, bound=budgets.SERVING_BOUND)
    # The same rule as data, for the manifest's `reason_data` beside the words.
    rejection = (
        measure.rejection(computes, serving, prepared.task, vs_fp32, bound=budgets.SERVING_BOUND) if reason else None
    )
    learned = tuple(node for refusal in refusals for node in refusal["kept"])
    return _Attempt(
        model, settings, data, session, outputs, vs_fp32, reason, computes, budget, learned=learned, rejection=rejection
    )


def _calibration_skip(prepared: Prepared, name: str) -> str:
    """Why a variant that needs real calibration data (int8-static) is skipped without, unless there was nothing
    to make anyway (then that reason, which holds whatever data is given)."""
    try:
        variants.load(variant_table.variant(name)).require_work(prepared.fp32)
    except lower_precision.VariantSkipped as skipped:
        return str(skipped)
    return SYNTHETIC_CALIBRATION


def _rescue(
    prepared: Prepared, name: str, fp32_run: tuple[Any, list[Feeds]], fp32_bytes: bytes, first: _Attempt
) -> _Attempt:
    """Keep the nodes that hurt most in float until the variant is within budget (convert/rescue/fallback.py)."""
    if (count := len(list(all_nodes(prepared.fp32.graph)))) > FALLBACK_MAX_NODES:
        first.reason = (
            f"{first.reason}; no fallback search: the graph has {count:,} nodes, more than "
            f"{FALLBACK_MAX_NODES:,} (each of its up to {2 * fallback.MAX_TRIES + 1} tries converts and "
            "loads the whole model again)"
        )
        return first
    # A Constant kept in float changes nothing downstream: never a candidate.
    nodes = [n for n in prepared.fp32.graph.node if n.name and n.op_type != "Constant"]
    row = variant_table.variant(name)
    precision = row.precision
    candidates = _candidates(row, prepared.fp32, nodes)
    try:
        ranked = node_errors.introduced_errors(
            prepared.fp32, first.model, prepared.golden_inputs[:2], candidates if precision == "int8" else None
        )
    except ModelFileError:
        return first  # the variant's intermediate values cannot be read: nothing to rank by
    ranking = [node for node, _ in ranked if node in candidates]
    if not ranking:
        return first

    def attempt(kept: tuple[str, ...]) -> tuple[_Attempt | None, str | None]:
        # What onnxruntime's refusals taught the first attempt stays kept in every try.
        made = _attempt(prepared, name, fp32_run, fp32_bytes, (*first.learned, *kept))
        if not isinstance(made, _Attempt):
            return None, made["reason"]
        return made, made.reason

    share = row.rescue_share or fallback.LIMIT_SHARE
    found = fallback.search(ranking, len(candidates), attempt, share, limit_first=True)
    if found.best is None:
        # What a node adds itself misses what the network amplifies later: centerface's first
        # convolutions, fed raw 0..255 pixels, decide its fp16 error but rank low. So the nodes
        # nearest the inputs are tried next, in graph order.
        in_order = fallback.search([n.name for n in nodes if n.name in candidates], len(candidates), attempt, share)
        in_order.ranking, in_order.tries = "graph order", found.tries + in_order.tries
        if in_order.best is not None:
            found = in_order
        else:
            found.tries = in_order.tries
    if found.best is None:
        first.fallback = found.record(first.reason or "")
        first.reason = (
            f"{first.reason}; still outside with up to {found.limit} of its {len(candidates)} "
            "candidate nodes kept in float"
        )
        # The size rule holds for every try: a rescue that keeps most of the file in float is refused
        # before it is run, and the reason says so (it may have been within budget, at fp32's size).
        oversized = sorted({t["kept"] for t in found.tries if t["result"].endswith(NOT_WORTH_SERVING)})
        if oversized:
            first.reason += (
                f"; keeping {' or '.join(map(str, oversized))} in float leaves the file not at least "
                f"{MIN_SHRINK[precision]}x smaller than fp32"
            )
        return first
    found.best.fallback = found.record(first.reason or "")
    if "refusals" in first.settings:  # the tries kept them from the start, and were never refused
        found.best.settings["refusals"], found.best.learned = first.settings["refusals"], first.learned
    return found.best


def _candidates(row: Variant, model: onnx.ModelProto, nodes: list[onnx.NodeProto]) -> set[str]:
    """The nodes the row's fallback search may keep in float (onnxport/variants.py Rescue)."""
    if row.rescue == "weight readers":
        # The weight-only variants name the readers of the weights they store (int4 keeps its in 8-bit blocks
        # rather than float: convert/variants/int4.py).
        readers = variants.load(row).candidates(model)
        return {n.name for n in nodes if n.name in readers}
    if row.rescue == "quantized operators":
        return {n.name for n in nodes if n.op_type in INT8_OPS}
    return {n.name for n in nodes} if row.rescue == "any node" else set()


def _convert(prepared: Prepared, name: str, keep_float: tuple[str, ...]) -> tuple[onnx.ModelProto, Settings]:
    """The variant made by its module (convert/variants/), and checked."""
    model, settings = variants.load(variant_table.variant(name)).make(prepared, keep_float)
    if name != "fp32":  # the model as built was checked when it was prepared
        onnx.checker.check_model(model)
    return model, settings


SPEED_RUNS = 7


def _native_speed(session, feeds: Feeds) -> Speed:
    """Native onnxruntime's latency on the first golden set, on this machine: the fastest of SPEED_RUNS runs.

    A ranking aid for choosing among variants (int8 is not always faster than
    fp32 on CPUs without VNNI), not a benchmark: `onnxport bench` measures properly.
    The browser's plan ranks variants by it until a browser measures them, so it must not
    depend on what else the build machine ran: other work only ever adds time to a run, and
    minilm's medians taken during a 2-core build beside other jobs said int8-dynamic 160 ms and
    int4 21 ms, which made int4 the browser's default; the same files' fastest of 7 runs
    afterwards, still beside those jobs, were 7.8 ms and 29.4 ms.
    """
    runtime.run(session, feeds)  # warm-up
    samples = []
    for _ in range(SPEED_RUNS):
        start = time.perf_counter()
        runtime.run(session, feeds)
        samples.append(time.perf_counter() - start)
    batch = next(iter(feeds.values())).shape[0] if feeds else 1
    return {
        "native_ms": round(min(samples) * 1000, 4),
        "runs": SPEED_RUNS,
        "inputs": f"golden set 0 (batch {batch})",
        "onnxruntime_threads": os.cpu_count(),
    }


def run_all(model_bytes: bytes, inputs: list[Feeds], label: str) -> tuple[Any, list[Feeds]]:
    """The session, and its outputs for every golden set."""
    session = runtime.create_session(model_bytes, label=label)
    return session, [runtime.run(session, feeds, label=label) for feeds in inputs]
