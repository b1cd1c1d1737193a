"""Import an existing ONNX model: a .onnx file (external data allowed) or an ONNX test directory.

A test directory is `model.onnx` plus `test_data_set_*/input_K.pb, output_K.pb`,
the layout of ONNX's backend tests and model zoo: its tensors become the golden
inputs and the expected outputs. `--inputs` gives a bare file its golden inputs
(convert/intake/user_data.py); fp32 onnxruntime's outputs then stand in for the source.
Without either, seeded random inputs are made from the input signature: the
golden data is "synthetic", and the manifest and the command say so.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import onnx.version_converter
from google.protobuf.message import DecodeError
from onnx.external_data_helper import uses_external_data

from onnxport import runtime
from onnxport.convert.arithmetic import arithmetic
from onnxport.convert.graph import all_nodes, name_nodes
from onnxport.convert.intake import file_kind, model_texts, native_trees, user_data
from onnxport.convert.intake.export import DEFAULT_OPSET, check_and_infer, export
from onnxport.convert.intake.request import ImportRequest
from onnxport.convert.intake.sources import build_key
from onnxport.convert.intake.tools import build_tools
from onnxport.convert.node_order import sort_nodes
from onnxport.convert.prepared import Prepared, Progress
from onnxport.errors import ModelFileError, UsageError
from onnxport.pipelines import spec_check
from onnxport.pipelines.spec import SpecError
from onnxport.recipe import Feeds, Tolerance
from onnxport.repository import testdata

# What ONNX's own backend test runner accepts (rtol 1e-3), with an absolute floor.
IMPORT_TOLERANCE = Tolerance(abs=1e-5, rel=1e-3)
SEED = 0
DYNAMIC_DIM_SIZE = 2  # a dynamic dim in generated inputs; >1 so batch handling is exercised
MIN_RUNTIME_OPSET = 7  # onnxruntime has no kernels for older opsets (e.g. Gemm-6)
UPGRADE_OPSET = 13
MAX_RUNTIME_IR = 13  # "max supported IR version: 13" (onnxruntime 1.30)
# The default node limit (setting import_max_nodes). Real models have hundreds to a few thousand nodes
# (the third-party corpus: under 1,000; a BERT-base about 1,000 to 3,000; big detectors about 5,000). A legal
# 100,000-node chain used to take minutes and GBs; now fp16 and int8 skip such graphs, but every fp32
# session still grows faster than the graph (7.5 s for a 100,000-node chain).
MAX_NODES = 50_000
MAX_NODES_SETTING = "import_max_nodes"


def import_key(request: ImportRequest) -> str:
    """Hash of every byte the import reads (model, its external data, test sets, the files its options name),
    plus its settings."""
    model_path, test_dir = request.model_file, request.test_dir
    with model_path.open("rb") as handle:  # in chunks: the file may be GBs
        digest = hashlib.file_digest(handle, "sha256")
    files = set(_external_data_files(model_path))
    if test_dir is not None:
        files |= {p for p in test_dir.glob("test_data_set_*/*.pb") if p.is_file()}
    for extra in sorted(files):
        digest.update(str(extra).encode() + b"\0")
        digest.update(_file_sha256(extra) if extra.is_file() else b"missing")
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


def _file_sha256(path: Path) -> bytes:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()


def _external_data_files(model_path: Path) -> list[Path]:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(model_path.read_bytes())
    except DecodeError:
        return []  # reading it again in prepare_import says what is wrong
    locations = {
        e.value for t in _all_tensors(model) if uses_external_data(t) for e in t.external_data if e.key == "location"
    }
    # Only files inside the folder: prepare_import refuses the others before reading them.
    files = [model_path.parent / loc for loc in locations if _inside_folder(model_path.parent, loc) is not None]
    _check_external_sizes(model, model_path)  # before hashing them: a sparse 64 GiB file takes minutes to read
    return files


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
        model, upgraded = _modernize(model, model_path)
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
    golden_data = "synthetic" if given is None and not sets else "real"
    float_outputs = [o for o in output_names if expected[0].get(o) is not None and expected[0][o].dtype.kind == "f"]
    if calibration_sets is not None:
        user_data.run(fp32_session, calibration_sets, "--calibration")  # a refusal here, not as a rejected variant
        batches = [s.feeds for s in calibration_sets]
        calibrated = {"calibration": f"{len(batches)} batches from {calibration_path}", "calibration_data": "real"}
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


def read_model(model_path: Path, max_nodes: int | None = None) -> onnx.ModelProto:
    """Parse, refuse a graph of more than max_nodes nodes (None: any) and unsafe external data, and
    inline it; every failure names the file. Bytes that are no ONNX model are a usage error (exit 2): the
    command line named the wrong file."""
    data = model_path.read_bytes()
    if not data:
        raise UsageError(f"{model_path}: the file is empty; expected an ONNX model")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError as exc:
        raise UsageError(_not_onnx(model_path, data, f"protobuf parse failed: {exc}")) from exc
    if not model.HasField("graph") or not model.graph.node:
        raise UsageError(_not_onnx(model_path, data, "no graph nodes after parsing: not a model, or truncated"))
    _check_size(model, model_path, max_nodes)
    _check_opsets(model, model_path)
    _check_outputs(model, model_path)
    _load_external_data(model, model_path.parent, model_path)
    return model


def _not_onnx(model_path: Path, data: bytes, parse_error: str) -> str:
    """The error for bytes that are no ONNX model: what the file is, when its first bytes say (file_kind.py),
    else the parser's words."""
    what = file_kind.describe(model_path, data[:1024])
    expected = (
        "expected an ONNX model (.onnx, a protobuf ModelProto), an ONNX test directory, or a LightGBM or "
        "XGBoost model file"
    )
    if what is None:
        return f"{model_path}: not an ONNX model ({parse_error}); {expected}"
    return f"{model_path}: {what}, not an ONNX model; {expected}"


def _check_outputs(model: onnx.ModelProto, model_path: Path) -> None:
    """Every output a tensor: golden data, the V2 protocol and browser runtimes carry nothing else. A converter's
    ZipMap (a sequence of maps, what onnxmltools and skl2onnx write for probabilities unless told not to) is the
    usual other kind; it used to fail later as "AttributeError: 'list' object has no attribute 'dtype'"."""
    for output in model.graph.output:
        kind = output.type.WhichOneof("value")
        if kind == "tensor_type":
            continue
        if kind == "sequence_type" and output.type.sequence_type.elem_type.WhichOneof("value") == "map_type":
            what = "a sequence of maps (a ZipMap's)"
        else:
            what = {
                "sequence_type": "a sequence",
                "map_type": "a map",
                "optional_type": "an optional",
                "sparse_tensor_type": "a sparse tensor",
            }.get(kind or "", "of no declared type")
        raise UsageError(
            f"{model_path}: output {output.name!r} is {what}; expected a tensor (onnxport serves "
            "tensor outputs only): convert it again with zipmap=False (onnxmltools, skl2onnx), or remove "
            "that output"
        )


def _check_size(model: onnx.ModelProto, model_path: Path, max_nodes: int | None) -> None:
    """Before any work that grows with the graph (checker, shape inference, sessions, variants)."""
    if max_nodes is not None and (count := sum(1 for _ in all_nodes(model.graph))) > max_nodes:
        raise UsageError(
            f"{model_path}: {count:,} nodes (subgraphs included), more than the import's limit of {max_nodes:,} "
            f"(--max-nodes, setting {MAX_NODES_SETTING}); raise it to import a bigger graph, whose import takes "
            'longer (docs/guide/build-and-import.md, "Import limits")'
        )


def _modernize(model: onnx.ModelProto, model_path: Path) -> tuple[onnx.ModelProto, dict]:
    """Bring old models to what onnxruntime and the converters expect.

    Opsets below onnxruntime's oldest kernels are converted up with onnx's
    version converter; initializers listed as graph inputs (IR < 4) are taken
    off the input list, or fp16 conversion would leave the inputs' types behind.
    """
    notes: dict = {}
    opset = _default_opset(model)
    if opset == 0 and not any(node.domain in ("", "ai.onnx") for node in all_nodes(model.graph)):
        # A graph of other domains' nodes alone (onnxmltools' XGBoost file: one ai.onnx.ml TreeEnsemble) may
        # import no default opset; nothing to convert, but the variants' Casts need one.
        model.opset_import.add(domain="", version=UPGRADE_OPSET)
        notes["opset_upgraded"] = f"none -> {UPGRADE_OPSET}"
    elif opset < MIN_RUNTIME_OPSET:
        try:
            model = onnx.version_converter.convert_version(model, UPGRADE_OPSET)
        except Exception as exc:
            raise ModelFileError(
                f"{model_path}: opset {opset} is older than onnxruntime runs ({MIN_RUNTIME_OPSET}+) "
                f"and onnx's version converter could not upgrade it: {exc}"
            ) from exc
        notes["opset_upgraded"] = f"{opset} -> {UPGRADE_OPSET}"
    if model.ir_version > MAX_RUNTIME_IR:
        # Newer onnx writers stamp IR versions onnxruntime refuses; the opsets decide what is needed.
        lowered = max(onnx.helper.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True), 4)
        notes["ir_version_lowered"] = f"{model.ir_version} -> {lowered}"
        model.ir_version = lowered
    initializers = {i.name for i in model.graph.initializer}
    if any(i.name in initializers for i in model.graph.input):
        kept = [i for i in model.graph.input if i.name not in initializers]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        model.ir_version = max(model.ir_version, 4)
        notes["initializers_removed_from_inputs"] = True
    named = name_nodes(model.graph)
    if named:
        notes["nodes_named"] = named
    # After naming, so a generated name holds the node's index in the file as given.
    moved = sort_nodes(model.graph)
    if moved:
        notes["nodes_sorted"] = moved
    return model, notes


def _default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _check_opsets(model: onnx.ModelProto, model_path: Path) -> None:
    newest = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and not 1 <= opset.version <= newest:
            raise ModelFileError(
                f"{model_path}: unsupported opset {opset.version} for the default domain; "
                f"onnx {onnx.__version__} knows opsets 1 to {newest}"
            )


def _load_external_data(model: onnx.ModelProto, folder: Path, model_path: Path) -> None:
    for tensor in _all_tensors(model):
        if not uses_external_data(tensor):
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        target = _inside_folder(folder, location)
        if target is None:
            raise ModelFileError(
                f"{model_path}: external data {location!r} of tensor {tensor.name!r} "
                f"is outside the model's folder {folder.resolve()}; refusing to read it"
            )
        if not target.is_file():
            raise ModelFileError(f"{model_path}: external data file {location!r} of tensor {tensor.name!r} is missing")
    _check_external_sizes(model, model_path)
    try:
        onnx.load_external_data_for_model(model, str(folder))
    except MemoryError:
        raise ModelFileError(f"{model_path}: its external data does not fit in memory") from None
    except Exception as exc:
        raise ModelFileError(f"{model_path}: cannot read its external data: {exc}") from exc


def _inside_folder(folder: Path, location: str) -> Path | None:
    """The resolved path of an external-data location, or None when it is empty, absolute or leads out of
    `folder` (by `..` or a symlink)."""
    if not location or Path(location).is_absolute():
        return None
    target = (folder / location).resolve()
    return target if target.is_relative_to(folder.resolve()) else None


def _check_external_sizes(model: onnx.ModelProto, model_path: Path) -> None:
    """No external-data file larger than what its tensors declare: a tensor without a length is read to the
    file's end, and a sparse 64 GiB file was read whole (a MemoryError)."""
    extents: dict[Path, tuple[int | None, str]] = {}  # file -> (how far its tensors reach, None: to its end)
    for tensor in _all_tensors(model):
        if not uses_external_data(tensor):
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        target = model_path.parent / location
        # A file outside the folder is never looked at, not even its size: _load_external_data refuses it.
        if _inside_folder(model_path.parent, location) is None or not target.is_file():
            continue
        reach, _ = extents.get(target, (0, location))
        end = _external_end(tensor)
        extents[target] = (None if reach is None or end is None else max(reach, end), location)
    for target, (reach, location) in extents.items():
        size = target.stat().st_size
        if reach is not None and size > reach:
            raise ModelFileError(
                f"{model_path}: external data file {location!r} is {size:,} bytes, but the tensors "
                f"stored in it declare {reach:,} (their offsets plus lengths); refusing to read it"
            )


def _external_end(tensor: onnx.TensorProto) -> int | None:
    """Where the tensor's bytes end in its file: offset + length, or + what its type and dims take (None for
    strings, whose size is in the bytes)."""
    fields = {e.key: e.value for e in tensor.external_data}
    try:
        offset = int(fields.get("offset") or 0)
        if fields.get("length"):
            return offset + int(fields["length"])
    except ValueError:
        return None  # onnx refuses it when it reads it
    if tensor.data_type in (onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED):
        return None
    itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    return offset + int(np.prod(tensor.dims, dtype=object)) * itemsize


def _all_tensors(model: onnx.ModelProto):
    yield from model.graph.initializer
    for node in model.graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t


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
