"""`onnxport export triton OUT`: the served variants as a Triton model repository.

Naming: one Triton model per variant, `<model>` for fp32 and `<model>_<variant>` for the others
(`digits_fp16`, `digits_int8_dynamic`), each with the one version `1`. Triton's versions are integer
releases of one model and a request without a version gets the latest; our variants are precisions
to choose between, not releases, so each is its own model, and a client that names only `digits`
gets fp32, as it does from `onnxport serve`.

Each model is `config.pbtxt` (platform onnxruntime_onnx; with a dynamic first axis on every input and
output, `max_batch_size` and dynamic batching, and dims without the batch axis; -1 for other dynamic
dims; one CPU instance group) and `1/model.onnx`, a copy of the content-addressed artifact.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from onnxport.dtypes import by_numpy_name
from onnxport.errors import OnnxportError, UsageError
from onnxport.repository import variant_record
from onnxport.repository.batch_axis import batch_axis_dynamic
from onnxport.repository.manifest import Manifest, ModelEntry
from onnxport.repository.names import check_stored_name, inside
from onnxport.repository.store import Repository
from onnxport.repository.variant_record import ServedVariant
from onnxport.repository.variant_table import order

MAX_BATCH_SIZE = 64
# Manifest dtypes (numpy names) as Triton's DataType names (onnxport/dtypes.py).
TRITON_TYPES = {name: d.triton for name, d in by_numpy_name().items()}


def model_name(model: str, variant: str) -> str:
    return model if variant == "fp32" else f"{model}_{variant.replace('-', '_')}"


def served(manifest: Manifest) -> list[tuple[str, str, ModelEntry, ServedVariant]]:
    """(model, variant, manifest entry, variant record) of every served variant, fp32 first."""
    return [
        (model, variant, entry, record)
        for model, entry in sorted(manifest["models"].items())
        for variant, record in sorted(entry["variants"].items(), key=lambda item: order(item[0]))
        if variant_record.served(record)
    ]


def config_pbtxt(name: str, entry: ModelEntry) -> str:
    batch = batch_axis_dynamic(entry)  # Triton may batch it
    lines = [
        f"name: {json.dumps(name)}",
        'platform: "onnxruntime_onnx"',
        f"max_batch_size: {MAX_BATCH_SIZE if batch else 0}",
    ]
    for kind, values in (("input", entry["inputs"]), ("output", entry["outputs"])):
        tensors = []
        for value in values:
            if value["shape"] is None:
                raise OnnxportError(f"{entry['name']}: {kind} {value['name']!r} has no known rank; Triton needs dims")
            dims = [d if isinstance(d, int) else -1 for d in (value["shape"][1:] if batch else value["shape"])]
            dtype = TRITON_TYPES.get(value["dtype"])
            if dtype is None:
                raise OnnxportError(
                    f"{entry['name']}: {kind} {value['name']!r} has dtype {value['dtype']}, "
                    "which Triton has no type for"
                )
            # A batched tensor with no other axis ([batch]) is dims [1] reshaped to [], as Triton documents.
            shape = f"dims: [ {', '.join(map(str, dims))} ]" if dims else "dims: [ 1 ]\n    reshape: { shape: [ ] }"
            tensors.append(f"  {{\n    name: {json.dumps(value['name'])}\n    data_type: {dtype}\n    {shape}\n  }}")
        lines.append(f"{kind} [\n" + ",\n".join(tensors) + "\n]")
    if batch:
        lines.append("dynamic_batching { }")
    lines.append("instance_group [\n  {\n    count: 1\n    kind: KIND_CPU\n  }\n]")
    return "\n".join(lines) + "\n"


def served_or_refuse(repository: Repository) -> list[tuple[str, str, ModelEntry, ServedVariant]]:
    """served() of the repository's manifest; an error when there is nothing to export, or when a
    name (from an older or hand-edited manifest) would not make one folder of its own inside OUT."""
    variants = served(repository.read_manifest())
    if not variants:
        raise OnnxportError(f"{repository.root}: no served variants to export (run `onnxport build`)")
    check_names(variants, repository.manifest_path)
    return variants


def check_names(variants: list, source: Path) -> None:
    """Every model and variant name keeps the name rule, and no two variants get one Triton name:
    checked before anything is written, so a bad manifest leaves no OUT at all."""
    seen: dict[str, tuple[str, str]] = {}
    for model, variant, _, _ in variants:
        check_stored_name(model, source)
        check_stored_name(variant, f"{source} (model {model!r})", what="variant")
        name = model_name(model, variant)
        if name in seen:
            raise OnnxportError(
                f"{source}: model {model!r} variant {variant!r} and model {seen[name][0]!r} variant "
                f"{seen[name][1]!r} would both be the Triton model {name!r}; rename one "
                f"(`onnxport remove` it and import it again under another name)"
            )
        seen[name] = (model, variant)


def write_repository(repository: Repository, out: Path) -> list[str]:
    """The Triton model repository at out, written whole or not at all; returns the model names."""
    variants = served_or_refuse(repository)
    return write_atomically(out, lambda folder: write_models(repository, variants, folder))


def write_models(repository: Repository, variants: list, folder: Path) -> list[str]:
    """One Triton model folder per variant in folder; returns their names."""
    names = []
    for model, variant, entry, record in variants:
        name = model_name(model, variant)
        # Every path is checked, not only the names: nothing written leaves the folder.
        model_folder = inside(folder, folder / name)
        model_folder.mkdir()
        inside(folder, model_folder / "1").mkdir()
        inside(folder, model_folder / "config.pbtxt").write_text(config_pbtxt(name, entry))
        # a hand-edited record may point anywhere
        artifact = inside(repository.root, repository.path_of(record["file"]), "read")
        if not artifact.is_file():
            raise OnnxportError(
                f"{model} {variant}: the manifest names {record['file']}, which is not in "
                f"{repository.root}; rebuild it (`onnxport build --force`)"
            )
        shutil.copyfile(artifact, inside(folder, model_folder / "1" / "model.onnx"))
        names.append(name)
    return names


def write_atomically(out: Path, write) -> Any:
    """write(folder) into a temporary folder beside out, renamed to out when it returns: a failure
    leaves nothing behind. out must not exist yet, or be an empty folder; a symbolic link is refused
    (the rename would not go through it: a link to an empty folder, or a dangling one, was a traceback)."""
    out = Path(out)
    if out.is_symlink():
        raise UsageError(
            f"{out} is a symbolic link (to {os.readlink(out)}); expected a new folder or an empty "
            "real folder: give the link's target, or another path"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} already exists and is not an empty folder; choose a new one")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{out}: cannot make its parent folder {out.parent} ({exc.strerror}); expected a path under a folder"
        ) from None
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        result = write(staging)
        if out.exists():
            out.rmdir()
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result
