"""Build one model: fp32 export -> variants -> measurements -> manifest entry.

Recipes and imported ONNX files meet here as a `Prepared` model: a checked
fp32 graph, golden inputs with the source's outputs, calibration inputs.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx

from onnxport import runtime, tensor_json
from onnxport.accuracy import measure
from onnxport.convert import reference, variants
from onnxport.convert.export import serialize
from onnxport.errors import ModelFileError, ValidationError
from onnxport.recipe import Feeds, Tolerance
from onnxport.repository import testdata
from onnxport.repository import variants as variant_table
from onnxport.repository.store import Transaction

Progress = Callable[[str], None]


@dataclass
class Prepared:
    name: str
    task: str
    kind: str  # pytorch | sklearn | onnx
    description: str
    fp32: onnx.ModelProto
    golden_inputs: list[Feeds]
    source_outputs: list[Feeds]  # what the source framework (or the test data) says
    calibration: list[Feeds]
    tolerance: Tolerance
    metric_output: str | None
    build_key: str
    labels: np.ndarray | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    assets: dict[str, Path] = field(default_factory=dict)
    int8_static_keep_float: tuple[str, ...] = ()
    playground: str = "generic"  # the playground's input widget (recipe.PLAYGROUNDS)
    bench_inputs: Feeds | None = None  # what `onnxport bench` measures with; None = golden row 0


def build(prepared: Prepared, transaction: Transaction, step: Progress) -> dict[str, Any]:
    """Validate the export, make and measure every variant, stage the files; return the entry."""
    fp32_bytes = serialize(prepared.fp32)
    step("validate fp32 against the source")
    fp32_run = _run_all(fp32_bytes, prepared.golden_inputs, f"{prepared.name} fp32")
    fp32_outputs = fp32_run[1]
    validation = measure.against(
        prepared.source_outputs, fp32_outputs, prepared.task, prepared.metric_output, prepared.tolerance
    )
    if not validation["within_tolerance"]:
        raise ValidationError(_validation_message(prepared, validation))

    entry = _describe(prepared)
    entry["validation"] = {
        "tolerance": {"abs": prepared.tolerance.abs, "rel": prepared.tolerance.rel},
        **validation,
    }
    entry["bench_inputs"] = _bench_inputs(prepared, fp32_run[0], entry["inputs"])
    fp32_size = len(fp32_bytes)
    reference_feeds = reference.reference_inputs(prepared.golden_inputs[0], entry["inputs"])
    for name in variant_table.NAMES:
        step(name)
        record = _make_variant(prepared, name, fp32_run, transaction, fp32_bytes, reference_feeds)
        if "bytes" in record:
            record["size_ratio"] = round(record["bytes"] / fp32_size, 4)
        entry["variants"][name] = record
    step("golden data")
    entry["golden"] = _stage_golden(prepared, transaction)
    entry["assets"] = {
        label: {**transaction.put_file(path.read_bytes(), path.suffix.lstrip(".") or "bin"), "name": path.name}
        for label, path in prepared.assets.items()
    }
    return entry


def _make_variant(
    prepared: Prepared, name: str, fp32_run: tuple[Any, list[Feeds]], transaction: Transaction, fp32_bytes: bytes,
    reference_feeds: tuple[Feeds, int],
) -> dict[str, Any]:
    """fp32_run: the fp32 session and its golden outputs, made once for validation and reused here;
    reference_feeds: (inputs, rows) of the variant's reference file, from reference.reference_inputs."""
    fp32_outputs = fp32_run[1]
    precision, budget = variant_table.variant(name).precision, variant_table.variant(name).budget
    try:
        model, settings = _convert(prepared, name)
    except variants.VariantSkipped as skipped:
        return {"precision": precision, "status": "skipped", "reason": str(skipped)}
    except Exception as exc:  # a converter crash costs this variant, not the whole build
        if name == "fp32":
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {"precision": precision, "status": "rejected",
                "reason": f"conversion failed: {type(exc).__name__}: {first}"}
    data = fp32_bytes if name == "fp32" else serialize(model)
    try:
        session, outputs = fp32_run if name == "fp32" else _run_all(data, prepared.golden_inputs, f"{prepared.name} {name}")
        speed = _native_speed(session, prepared.golden_inputs[0])
        reference_record = reference.stage(transaction, prepared.name, name, session, *reference_feeds)
    except ModelFileError as exc:
        if name == "fp32":
            raise
        return {"precision": precision, "status": "rejected", "reason": str(exc)}
    vs_fp32 = measure.against(fp32_outputs, outputs, prepared.task, prepared.metric_output)
    vs_source = measure.against(prepared.source_outputs, outputs, prepared.task, prepared.metric_output)
    reason = measure.verdict(name, budget, prepared.task, vs_fp32)
    record: dict[str, Any] = {
        **transaction.put_file(data, "onnx"),
        "precision": precision,
        "status": "rejected" if reason else "ok",
        "reason": reason,
        "operators": variants.operator_histogram(model),
        "vs_fp32": vs_fp32,
        "vs_source": vs_source,
        "budget": budget.as_json(),
        "settings": settings,
        "speed": speed,
        "reference": reference_record,
    }
    accuracy = measure.accuracy(prepared.labels, outputs, prepared.metric_output)
    if accuracy is not None:
        record["accuracy"] = accuracy
    return record


def _convert(prepared: Prepared, name: str) -> tuple[onnx.ModelProto, dict]:
    if name == "fp32":
        return prepared.fp32, {}
    if name == "fp16":
        model, settings = variants.make_fp16(prepared.fp32, [*prepared.golden_inputs, *prepared.calibration])
    elif name == "int8-dynamic":
        model, settings = variants.make_int8_dynamic(_copy(prepared.fp32))
    else:
        model, settings = variants.make_int8_static(
            _copy(prepared.fp32), prepared.calibration, prepared.int8_static_keep_float
        )
    onnx.checker.check_model(model)
    return model, settings


def _describe(prepared: Prepared) -> dict[str, Any]:
    model = prepared.fp32
    opsets = {(o.domain or "ai.onnx"): o.version for o in model.opset_import}
    return {
        "name": prepared.name,
        "task": prepared.task,
        "kind": prepared.kind,
        "description": prepared.description,
        "metric_output": prepared.metric_output,
        "build_key": prepared.build_key,
        "opset": opsets.get("ai.onnx"),
        "opsets": opsets,
        "ir_version": model.ir_version,
        "producer": {"name": model.producer_name, "version": model.producer_version},
        "inputs": [_value_info(v) for v in model.graph.input if v.name not in {i.name for i in model.graph.initializer}],
        "outputs": [_value_info(v) for v in model.graph.output],
        "operators": variants.operator_histogram(model),
        "facts": prepared.facts,
        "provenance": prepared.provenance,
        "playground": prepared.playground,
        "variants": {},
    }


def _value_info(value: onnx.ValueInfoProto) -> dict[str, Any]:
    tensor = value.type.tensor_type
    shape = [
        d.dim_value if d.HasField("dim_value") else (d.dim_param or -1)
        for d in tensor.shape.dim
    ] if tensor.HasField("shape") else None
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "unknown"
    return {"name": value.name, "dtype": dtype, "shape": shape}


def _bench_inputs(prepared: Prepared, session, inputs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The declared bench inputs as tensor JSON, once the fp32 export has run them; None without."""
    feeds = prepared.bench_inputs
    if feeds is None:
        return None
    names = [i["name"] for i in inputs]
    if sorted(feeds) != sorted(names):
        raise ValidationError(f"{prepared.name}: bench inputs {sorted(feeds)} are not the model's inputs {names}")
    try:
        runtime.run(session, feeds, label=f"{prepared.name} fp32 on its bench inputs")
    except ModelFileError as exc:
        raise ValidationError(str(exc)) from exc
    return tensor_json.encode({name: feeds[name] for name in names})


def _stage_golden(prepared: Prepared, transaction: Transaction) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="onnxport-golden-") as tmp:
        for index, (inputs, outputs) in enumerate(zip(prepared.golden_inputs, prepared.source_outputs)):
            testdata.write_set(Path(tmp), index, inputs, outputs)
        record = transaction.put_folder(Path(tmp))
    record["sets"] = len(prepared.golden_inputs)
    record["outputs_from"] = "source framework" if prepared.kind != "onnx" else "imported test data or fp32"
    return record


SPEED_RUNS = 7


def _native_speed(session, feeds: Feeds) -> dict[str, Any]:
    """Median latency of native onnxruntime on the first golden set, on this machine.

    A ranking aid for choosing among variants (int8 is not always faster than
    fp32 on CPUs without VNNI), not a benchmark: `onnxport bench` measures properly.
    """
    runtime.run(session, feeds)  # warm-up
    samples = []
    for _ in range(SPEED_RUNS):
        start = time.perf_counter()
        runtime.run(session, feeds)
        samples.append(time.perf_counter() - start)
    batch = next(iter(feeds.values())).shape[0] if feeds else 1
    return {"native_ms": round(statistics.median(samples) * 1000, 4), "runs": SPEED_RUNS,
            "inputs": f"golden set 0 (batch {batch})", "onnxruntime_threads": os.cpu_count()}


def _run_all(model_bytes: bytes, inputs: list[Feeds], label: str) -> tuple[Any, list[Feeds]]:
    """The session, and its outputs for every golden set."""
    session = runtime.create_session(model_bytes, label=label)
    return session, [runtime.run(session, feeds, label=label) for feeds in inputs]


def _validation_message(prepared: Prepared, validation: dict[str, Any]) -> str:
    tol = prepared.tolerance
    for name, errors in validation["outputs"].items():
        if "shape_mismatch" in errors:
            return (f"{prepared.name}: fp32 export output {name!r} has shape {errors['shape_mismatch']['got']}, "
                    f"the source gives {errors['shape_mismatch']['expected']}")
        if "first_mismatch" in errors or errors.get("nonfinite"):
            first = errors.get("first_mismatch", {})
            return (
                f"{prepared.name}: fp32 export differs from the {prepared.kind} source on output {name!r}: "
                f"max abs error {errors['max_abs']:.3g}, max rel error {errors['max_rel']:.3g}; first at index "
                f"{first.get('index')} (expected {first.get('expected')}, got {first.get('got')}); "
                f"tolerance abs {tol.abs} or rel {tol.rel}"
            )
    return f"{prepared.name}: fp32 export differs from its source"


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    clone = onnx.ModelProto()
    clone.CopyFrom(model)
    return clone
