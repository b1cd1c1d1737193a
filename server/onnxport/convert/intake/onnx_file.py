"""An ONNX file read for import: parsed, refused when it is too big, of an unknown opset or with outputs that
are no tensors, and its external data inlined from inside its folder only. Every failure names the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx.external_data_helper import uses_external_data

from onnxport.convert.graph import all_nodes
from onnxport.convert.intake import file_kind
from onnxport.errors import ModelFileError, UsageError

# The default node limit (setting import_max_nodes). Real models have hundreds to a few thousand nodes
# (the third-party corpus: under 1,000; a BERT-base about 1,000 to 3,000; big detectors about 5,000). A legal
# 100,000-node chain used to take minutes and GBs; now fp16 and int8 skip such graphs, but every fp32
# session still grows faster than the graph (7.5 s for a 100,000-node chain).
MAX_NODES = 50_000
MAX_NODES_SETTING = "import_max_nodes"


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


def external_data_files(model_path: Path) -> list[Path]:
    """The external-data files inside the model's folder that the file names (the import key hashes them)."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(model_path.read_bytes())
    except DecodeError:
        return []  # reading it again in read_model says what is wrong
    locations = {
        e.value for t in _all_tensors(model) if uses_external_data(t) for e in t.external_data if e.key == "location"
    }
    # Only files inside the folder: prepare_import refuses the others before reading them.
    files = [model_path.parent / loc for loc in locations if _inside_folder(model_path.parent, loc) is not None]
    _check_external_sizes(model, model_path)  # before hashing them: a sparse 64 GiB file takes minutes to read
    return files
