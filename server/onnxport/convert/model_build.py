"""One model into its manifest entry (several in a transaction: build_transaction.py; a variant: variant_maker.py).

fp32 validated -> each variant -> measurements -> entry, staged in the caller's transaction. Recipes and
imported ONNX files meet here as a `Prepared` model: a checked fp32 graph, golden inputs with the source's
outputs, calibration inputs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import cast

import onnx

from onnxport import runtime, tensor_json
from onnxport.accuracy import measure
from onnxport.accuracy.measured import Measurement
from onnxport.convert import lower_precision, reference, variant_maker
from onnxport.convert.intake.export import serialize
from onnxport.convert.prepared import Prepared, Progress
from onnxport.errors import ModelFileError, RecipeError, ValidationError
from onnxport.json_boundary import JsonObject
from onnxport.pipelines import spec_check
from onnxport.pipelines.spec import PipelineSpec, SpecError
from onnxport.repository import testdata, variant_record, variant_table
from onnxport.repository.batch_axis import batch_axis
from onnxport.repository.manifest import Golden, ModelEntry, ValueInfo
from onnxport.repository.store import Transaction


def build(prepared: Prepared, transaction: Transaction, step: Progress) -> ModelEntry:
    """Validate the export, make and measure every variant, stage the files; return the entry."""
    pipeline = _pipeline(prepared)  # before any work: a spec that names no input of this model is the author's
    fp32_bytes = serialize(prepared.fp32)
    step("validate fp32 against the source")
    fp32_run = variant_maker.run_all(fp32_bytes, prepared.golden_inputs, f"{prepared.name} fp32")
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
    reference_feeds = reference.reference_inputs(prepared.golden_inputs[0], entry["inputs"], entry["batch_axis"])
    for name in variant_table.NAMES:
        step(name)
        record = variant_maker.make_variant(prepared, name, fp32_run, transaction, fp32_bytes, reference_feeds)
        if variant_record.made(record):  # a file was measured: its size, and what people are shown for it
            record["size_ratio"] = round(record["bytes"] / fp32_size, 4)
            record["label"] = variant_table.label(name, record["arithmetic"])
        entry["variants"][name] = record
    step("golden data")
    entry["golden"] = _stage_golden(prepared, transaction)
    entry["assets"] = {
        label: {**transaction.put_file(path.read_bytes(), path.suffix.lstrip(".") or "bin"), "name": path.name}
        for label, path in prepared.assets.items()
    }
    if pipeline is not None:
        entry["pipeline"] = pipeline
    # Assembled key by key from _describe; the schema tests (tests/repository/test_manifest_schema.py) hold it to
    # the type.
    return entry


def _pipeline(prepared: Prepared) -> PipelineSpec | None:
    """The spec the entry publishes, checked against the model once: an import's by the importer
    (Prepared.pipeline_checked), a recipe's here."""
    if prepared.pipeline is None or prepared.pipeline_checked:
        return cast(PipelineSpec | None, prepared.pipeline)  # the importer checked it
    graph = prepared.fp32.graph
    initializers = {i.name for i in graph.initializer}
    try:
        inputs = [v.name for v in graph.input if v.name not in initializers]
        outputs = [v.name for v in graph.output]
        return cast(
            PipelineSpec,
            dict(spec_check.check(prepared.pipeline, prepared.name, inputs, outputs, list(prepared.assets))),
        )
    except SpecError as exc:  # the recipe author's
        raise RecipeError(str(exc)) from None


def _describe(prepared: Prepared) -> ModelEntry:  # the entry's first keys; build() adds the rest
    model = prepared.fp32
    opsets = {(o.domain or "ai.onnx"): o.version for o in model.opset_import}
    initializers = {i.name for i in model.graph.initializer}
    inputs = [_value_info(v) for v in model.graph.input if v.name not in initializers]
    outputs = [_value_info(v) for v in model.graph.output]
    # Not yet an entry: build() adds validation, bench_inputs, golden, assets and each variant.
    described = {
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
        "inputs": inputs,
        "outputs": outputs,
        "operators": lower_precision.operator_histogram(model),
        "facts": prepared.facts,
        "provenance": prepared.provenance,
        "playground": prepared.playground,
        "golden_data": prepared.golden_data,  # real, or seeded random inputs the verdicts hold on only
        "batch_axis": batch_axis(inputs, outputs),  # whether golden rows may be cut or requests stacked
        "variants": {},
    }
    return cast(ModelEntry, described)


def _value_info(value: onnx.ValueInfoProto) -> ValueInfo:
    tensor = value.type.tensor_type
    shape = (
        [d.dim_value if d.HasField("dim_value") else (d.dim_param or -1) for d in tensor.shape.dim]
        if tensor.HasField("shape")
        else None
    )
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "unknown"
    return {"name": value.name, "dtype": dtype, "shape": shape}


def _bench_inputs(prepared: Prepared, session, inputs: list[ValueInfo]) -> JsonObject | None:
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


def _stage_golden(prepared: Prepared, transaction: Transaction) -> Golden:
    with tempfile.TemporaryDirectory(prefix="onnxport-golden-") as tmp:
        for index, (inputs, outputs) in enumerate(zip(prepared.golden_inputs, prepared.source_outputs)):
            testdata.write_set(Path(tmp), index, inputs, outputs)
        record = transaction.put_folder(Path(tmp))
    return {
        **record,
        "sets": len(prepared.golden_inputs),
        "outputs_from": "source framework" if prepared.kind != "onnx" else "imported test data or fp32",
    }


def _validation_message(prepared: Prepared, validation: Measurement) -> str:
    tol = prepared.tolerance
    for name, errors in validation["outputs"].items():
        if "shape_mismatch" in errors:
            return (
                f"{prepared.name}: fp32 export output {name!r} has shape {errors['shape_mismatch']['got']}, "
                f"the source gives {errors['shape_mismatch']['expected']}"
            )
        if "first_mismatch" in errors or errors.get("nonfinite"):
            first = errors.get("first_mismatch", {})
            return (
                f"{prepared.name}: fp32 export differs from the {prepared.kind} source on output {name!r}: "
                f"max abs error {errors['max_abs']:.3g}, max rel error {errors['max_rel']:.3g}; first at index "
                f"{first.get('index')} (expected {first.get('expected')}, got {first.get('got')}); "
                f"tolerance abs {tol.abs} or rel {tol.rel}"
            )
    return f"{prepared.name}: fp32 export differs from its source"
