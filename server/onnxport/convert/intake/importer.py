"""Import an existing ONNX model: a .onnx file (external data allowed) or an ONNX test directory.

A test directory is `model.onnx` plus `test_data_set_*/input_K.pb, output_K.pb`,
the layout of ONNX's backend tests and model zoo: its tensors become the golden
inputs and the expected outputs. `--inputs` gives a bare file its golden inputs
(convert/intake/user_data.py); fp32 onnxruntime's outputs then stand in for the source.
Without either, seeded random inputs are made from the input signature: the
golden data is "synthetic", and the manifest and the command say so.

The file is read and checked by onnx_file.py and brought up to date by modernize.py.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import numpy as np
import onnx
import onnx.version_converter

from onnxport import runtime
from onnxport.convert.arithmetic import arithmetic
from onnxport.convert.intake import model_texts, native_trees, user_data
from onnxport.convert.intake.export import DEFAULT_OPSET, check_and_infer, export
from onnxport.convert.intake.modernize import modernize
from onnxport.convert.intake.onnx_file import external_data_files, read_model
from onnxport.convert.intake.request import ImportRequest
from onnxport.convert.intake.sources import build_key
from onnxport.convert.intake.tools import build_tools
from onnxport.convert.prepared import Prepared, Progress
from onnxport.errors import ModelFileError, UsageError
from onnxport.pipelines import spec_check
from onnxport.pipelines.spec import SpecError
from onnxport.recipe import Feeds, Tolerance
from onnxport.repository import testdata
from onnxport.repository.manifest import Provenance
from onnxport.repository.store import sha256_file

# What ONNX's own backend test runner accepts (rtol 1e-3), with an absolute floor.
IMPORT_TOLERANCE = Tolerance(abs=1e-5, rel=1e-3)
SEED = 0
DYNAMIC_DIM_SIZE = 2  # a dynamic dim in generated inputs; >1 so batch handling is exercised


def import_key(request: ImportRequest) -> str:
    """Hash of every byte the import reads (model, its external data, test sets, the files its options name),
    plus its settings."""
    model_path, test_dir = request.model_file, request.test_dir
    with model_path.open("rb") as handle:  # in chunks: the file may be GBs
        digest = hashlib.file_digest(handle, "sha256")
    files = set(external_data_files(model_path))
    if test_dir is not None:
        files |= {p for p in test_dir.glob("test_data_set_*/*.pb") if p.is_file()}
    for extra in sorted(files):
        digest.update(str(extra).encode() + b"\0")
        digest.update(bytes.fromhex(sha256_file(extra)) if extra.is_file() else b"missing")
    key = build_key(
        {
            "import_sha256": digest.hexdigest(),
            "task": request.task,
            "metric_output": request.metric_output,
            "calibration_sha256": user_data.digest(request.calibration),
            "forms": list(request.forms),
            "inputs_sha256": user_data.digest(request.inputs),
            "pipeline_sha256": user_data.digest(request.pipeline) if request.pipeline else None,
            "assets_sha256": [user_data.digest(a) for a in request.assets],
        }
    )
    if request.description is None:
        return key
    # The same file with another description is another import (skipped only when nothing it writes changes).
    return hashlib.sha256(f"{key}\0description\0{request.description}".encode()).hexdigest()


def prepare_import(request: ImportRequest, key: str, step: Progress) -> Prepared:
    """The checked model with its golden and calibration inputs. The options were checked alone when the request
    was made (request.py); here what needs the model (--inputs, --calibration, --metric-output, the pipeline
    spec) is checked against it before anything is built, and so is its size, against request.max_nodes."""
    path, model_path, test_dir = request.path, request.model_file, request.test_dir
    inputs_path, calibration_path, metric_output = request.inputs, request.calibration, request.metric_output
    budgets = request.budgets
    # A LightGBM or XGBoost model file (not ONNX): converted as a recipe's model, checked against its library.
    native = native_trees.sniff(model_path) if test_dir is None else None
    library = None
    if native is not None:
        step(f"convert the {native} model file")
        library = native_trees.source_model(model_path, native, budgets.trees)
        model = export(library, DEFAULT_OPSET)
        upgraded: dict = {"converted_from": f"{native} model file"}
    else:
        step("read ONNX file")
        model = read_model(model_path, request.max_nodes)
        # Before the checker, shape inference and the sessions each copy the model.
        cut = model_texts.cut_texts(model, budgets.text_bytes)
        if cut:
            step(f"cut {len(cut)} long text(s): {cut[0]}" + (f" and {len(cut) - 1} more" if len(cut) > 1 else ""))
        step("check model")
        model, upgraded = modernize(model, model_path)
        if cut:
            upgraded["texts_cut"] = cut[:20] + ([f"and {len(cut) - 20} more"] if len(cut) > 20 else [])
        model = check_and_infer(model, str(model_path), request.max_value_bytes)
    specs = user_data.signature(model)
    input_names = [s.name for s in specs]
    output_names = [o.name for o in model.graph.output]
    if metric_output is not None and metric_output not in output_names:
        raise UsageError(
            f"--metric-output {metric_output!r} is not an output of {model_path.name}; "
            f"its outputs are {', '.join(map(repr, output_names))}"
        )
    assets = request.labelled_assets
    pipeline = _pipeline(request, input_names, output_names, list(assets))

    step("golden data")
    given = user_data.load(inputs_path, "--inputs", specs, budgets.data_bytes) if inputs_path is not None else None
    calibration_sets = (
        user_data.load(calibration_path, "--calibration", specs, budgets.data_bytes) if calibration_path else None
    )
    sets = testdata.read_sets(test_dir, input_names, output_names) if test_dir else []
    for index, (inputs, _) in enumerate(sets):
        user_data.check(inputs, f"{test_dir}: test set {index + 1} of {len(sets)}", specs)
    fp32_session = runtime.create_session(model.SerializeToString(), label=str(model_path))
    if library is not None:
        golden_inputs = [s.feeds for s in given] if given is not None else [generated_inputs(model, input_names)]
        # The library's own predictions: the build's fp32 check is against them, as for a recipe.
        expected = [library.run(feeds) for feeds in golden_inputs]
        origin = (
            f"{_sets(len(given))} from --inputs {inputs_path}"
            if given is not None
            else f"seeded random inputs (seed {SEED})"
        ) + f"; expected outputs from {native}"
    elif given is not None:
        golden_inputs = [s.feeds for s in given]
        expected = user_data.run(fp32_session, given, "--inputs")
        origin = f"{_sets(len(given))} from --inputs {inputs_path}; expected outputs from {_reference(model)}"
    elif sets:
        golden_inputs = [inputs for inputs, _ in sets]
        expected = [outputs for _, outputs in sets]
        origin = f"{len(sets)} test_data_set folder{'s' if len(sets) != 1 else ''}"
    else:
        golden_inputs = [generated_inputs(model, input_names)]
        expected = [runtime.run(fp32_session, golden_inputs[0], label=str(model_path))]
        origin = f"seeded random inputs (seed {SEED}); expected outputs from {_reference(model)}"
    golden_data: Literal["real", "synthetic"] = "synthetic" if given is None and not sets else "real"
    float_outputs = [o for o in output_names if expected[0].get(o) is not None and expected[0][o].dtype.kind == "f"]
    if calibration_sets is not None:
        user_data.run(fp32_session, calibration_sets, "--calibration")  # a refusal here, not as a rejected variant
        batches = [s.feeds for s in calibration_sets]
        calibrated: Provenance = {
            "calibration": f"{len(batches)} batches from {calibration_path}",
            "calibration_data": "real",
        }
    else:
        batches = golden_inputs
        calibrated = {"calibration": f"the golden inputs ({origin})", "calibration_data": golden_data}
    return Prepared(
        name=request.name,
        task=request.task,
        kind="onnx",  # imported (names.py, the build and info tell imports by it); facts say from what
        description=request.description or f"Imported from {model_path.name}",
        fp32=model,
        golden_inputs=golden_inputs,
        source_outputs=expected,
        calibration=batches,
        tolerance=IMPORT_TOLERANCE,
        metric_output=metric_output or (float_outputs[0] if float_outputs else None),
        build_key=key,
        facts={"imported_from": str(path), "golden_data": origin, **upgraded},
        provenance={
            "import_path": str(path.resolve()),
            "tools": build_tools(library.framework if library else None),
            **calibrated,
        },
        playground="generic",  # nothing is known of an imported model's inputs but their signature
        bench_inputs=None,  # bench measures with golden row 0
        forms=request.forms,
        variants=request.variants,
        assets=assets,
        pipeline=pipeline,
        pipeline_checked=True,  # against this model and its --asset files, above
        golden_data=golden_data,
        calibration_data=calibrated["calibration_data"],
    )


def _sets(count: int) -> str:
    return f"{count} set{'s' if count != 1 else ''}"


def _reference(model: onnx.ModelProto) -> str:
    """What computed the expected outputs when the file itself did: "fp32 onnxruntime" for a float model; an
    already-quantized (or fp16) file has no fp32 variant to speak of, so the words say what it is."""
    computes = arithmetic(model)
    if computes == "fp32":
        return "fp32 onnxruntime"
    return f"onnxruntime running the file as given (it computes in {computes}; there is no fp32 model)"


def _pipeline(request: ImportRequest, inputs: list[str], outputs: list[str], assets: list[str]) -> dict | None:
    """--pipeline's spec, checked against the model and the --asset files before anything is built."""
    if request.pipeline is None:
        return None
    try:
        where = f"--pipeline {request.pipeline} (for {request.model_file.name})"
        return dict(spec_check.check(request.pipeline_spec, where, inputs, outputs, assets))
    except SpecError as exc:
        raise UsageError(str(exc)) from None


def generated_inputs(model: onnx.ModelProto, input_names: list[str]) -> Feeds:
    """Seeded inputs from the signature: normal floats, small non-negative integers, random bools."""
    rng = np.random.default_rng(SEED)
    feeds: Feeds = {}
    by_name = {i.name: i for i in model.graph.input}
    for name in input_names:
        tensor = by_name[name].type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        # Some exporters (paddle2onnx) write a dynamic dimension as dim_value -1 instead of a dim_param.
        shape = [
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else DYNAMIC_DIM_SIZE for d in tensor.shape.dim
        ]
        if dtype.kind == "f":
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            feeds[name] = rng.integers(0, 4, size=shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            raise ModelFileError(f"input {name!r} has type {dtype}: cannot generate golden inputs for it")
    return feeds
