"""The user's own inputs for an imported model (`--inputs`, `--calibration`): read, then checked
against the model's inputs before anything is built.

Both options take the same forms:
- `FILE.npz`: one set, one array per model input, keyed by input name; or several sets, keyed
  `<set>/<input>` (every key of the file one way or the other). No leading "set axis" is assumed:
  an array is fed to the model as it is.
- `FILE.npy`: one set, for a model with exactly one input.
- `DIR`: several sets: `test_data_set_*/input_K.pb` folders (ONNX's test layout, K in the model's
  input order; outputs are ignored), or `*.npz` files (each read as above, in file name order).

Every set is checked against the model's signature (names, dtypes, ranks, fixed dimensions, and the
named dimensions that must agree across inputs); a mismatch is a UsageError (exit 2) naming the
option, the file, the input, what the model expects and what came.
"""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from onnxport import runtime
from onnxport.convert.intake.data_budget import DATA_BUDGET, DataBudget
from onnxport.errors import ModelFileError, UsageError
from onnxport.recipe import Feeds
from onnxport.repository import batch_axis, testdata

SET_SEPARATOR = "/"  # `<set>/<input>` keys of a .npz holding several sets

Dim = int | str | None  # a fixed size, a dimension name (dim_param), or None (dynamic, unnamed)


@dataclass(frozen=True)
class InputSpec:
    """One model input as the graph declares it. dtype None: not a tensor; shape None: no shape."""

    name: str
    dtype: np.dtype | None
    shape: tuple[Dim, ...] | None

    def describe(self) -> str:
        dims = "?" if self.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"
        return f"{self.dtype or 'a non-tensor'} {dims}"


@dataclass(frozen=True)
class DataSet:
    """One set of inputs, keyed by the model's input names in the model's order; label names where it came from."""

    label: str
    feeds: Feeds


def signature(model: onnx.ModelProto) -> list[InputSpec]:
    """The model's inputs (initializers excluded), in graph order."""
    initializers = {i.name for i in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dtype = (
            onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
            if value.type.HasField("tensor_type") and tensor.elem_type
            else None
        )
        shape = (
            tuple(
                d.dim_value if d.HasField("dim_value") else batch_axis.shared_dimension(d.dim_param)
                for d in tensor.shape.dim
            )
            if tensor.HasField("shape")
            else None
        )
        specs.append(InputSpec(value.name, dtype, shape))
    return specs


def load(path: Path, option: str, specs: list[InputSpec], budget: int = DATA_BUDGET) -> list[DataSet]:
    """Every set at path, read and checked against specs; errors name the option and the file. What the files
    declare they unpack to is held to budget (bytes) before any is read (data_budget.py)."""
    names = [s.name for s in specs]
    if not path.exists():
        raise UsageError(f"{option} {path}: no such file or directory")
    spending = DataBudget(option, budget)
    if path.is_dir():
        sets = _read_folder(path, option, names, spending)
    elif path.suffix == ".npz":
        sets = _read_npz(path, option, names, spending)
    elif path.suffix == ".npy":
        sets = [DataSet(str(path), _read_npy(path, option, names, spending))]
    else:
        raise UsageError(
            f"{option} {path}: expected a .npz file, a .npy file (one-input models) or a folder "
            f"of test_data_set_* folders or .npz files"
        )
    return [DataSet(s.label, check(s.feeds, f"{option} {s.label}", specs)) for s in sets]


def check(feeds: dict[str, np.ndarray], label: str, specs: list[InputSpec]) -> Feeds:
    """feeds in the model's input order, or a UsageError naming what does not fit the signature."""
    names = [s.name for s in specs]
    extra = [k for k in feeds if k not in names]
    if extra:
        raise UsageError(
            f"{label}: {_plural('key', extra)} {', '.join(map(repr, extra))} "
            f"{'is not an input' if len(extra) == 1 else 'are not inputs'} of the model; "
            f"its inputs are {_signature_text(specs)}"
        )
    missing = [s for s in specs if s.name not in feeds]
    if missing:
        raise UsageError(
            f"{label}: no array for {_plural('input', missing)} "
            f"{', '.join(f'{s.name!r} ({s.describe()})' for s in missing)}; "
            f"given: {', '.join(map(repr, feeds)) or 'nothing'}"
        )
    named: dict[str, tuple[int, str]] = {}  # dimension name -> (size, where it was first seen)
    ordered: Feeds = {}
    for spec in specs:
        value = np.asarray(feeds[spec.name])
        ordered[spec.name] = value = _dtype_checked(value, spec, label)
        if spec.shape is None:
            continue
        got = list(value.shape)
        if len(got) != len(spec.shape):
            raise UsageError(
                f"{label}: input {spec.name!r} has shape {got} (rank {len(got)}); "
                f"the model expects rank {len(spec.shape)}: {spec.describe()}"
            )
        for axis, (want, size) in enumerate(zip(spec.shape, got)):
            if isinstance(want, int) and want > 0 and size != want:
                raise UsageError(
                    f"{label}: input {spec.name!r} has shape {got}; the model expects "
                    f"{spec.describe()} (dimension {axis} is {want})"
                )
            if isinstance(want, str):
                seen = named.setdefault(want, (size, f"input {spec.name!r} dimension {axis}"))
                if seen[0] != size:
                    raise UsageError(
                        f"{label}: dimension {want!r} is {seen[0]} in {seen[1]} but {size} in "
                        f"input {spec.name!r} dimension {axis}; the model names them alike, "
                        f"so they must be equal"
                    )
        if value.size == 0:
            raise UsageError(f"{label}: input {spec.name!r} has shape {got}, no elements")
    return ordered


def run(session, sets: list[DataSet], option: str) -> list[Feeds]:
    """fp32 onnxruntime's outputs on every set; a failure names the set and onnxruntime's reason."""
    outputs = []
    for data in sets:
        try:
            outputs.append(runtime.run(session, data.feeds, label=f"{option} {data.label}"))
        except runtime.RunError as exc:
            raise UsageError(
                f"{option} {data.label}: fp32 onnxruntime cannot run the model on these inputs: {exc.detail}"
            ) from exc
    return outputs


def digest(path: Path | None) -> str | None:
    """What the build key needs to know of a file or folder of inputs."""
    if path is None:
        return None
    if not path.exists():
        return "missing"  # load() says so, before anything is built
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    sha = hashlib.sha256()
    for file in files:
        sha.update(str(file.relative_to(path) if path.is_dir() else file.name).encode() + b"\0")
        sha.update(hashlib.sha256(file.read_bytes()).digest())
    return sha.hexdigest()


def _read_folder(path: Path, option: str, names: list[str], spending: DataBudget) -> list[DataSet]:
    test_sets = sorted(path.glob("test_data_set_*"), key=_set_number)  # read_sets' order
    npz_files = sorted(p for p in path.glob("*.npz") if p.is_file())
    if test_sets and npz_files:
        raise UsageError(f"{option} {path}: holds both test_data_set_* folders and .npz files; give one kind")
    if npz_files:
        return [s for file in npz_files for s in _read_npz(file, option, names, spending)]
    if not test_sets:
        raise UsageError(f"{option} {path}: no test_data_set_* folders and no .npz files in it")
    spending.files(sorted(p for folder in test_sets for p in folder.glob("input_*.pb") if p.is_file()))
    try:
        read = testdata.read_sets(path, names, [])
    except ModelFileError as exc:  # a wrong number of input_K.pb files, an unreadable tensor
        raise UsageError(f"{option} {exc}") from exc
    return [DataSet(str(folder), inputs) for folder, (inputs, _) in zip(test_sets, read)]


def _read_npz(path: Path, option: str, names: list[str], spending: DataBudget) -> list[DataSet]:
    spending.npz(path)
    try:
        with np.load(path, allow_pickle=False) as arrays:
            data = {key: arrays[key] for key in arrays.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{option} {path}: not a readable .npz file: {exc}") from exc
    if not data:
        raise UsageError(f"{option} {path}: the .npz holds no arrays; the model's inputs are {', '.join(names)}")
    if any(k in names for k in data) or not any(SET_SEPARATOR in k for k in data):
        return [DataSet(str(path), data)]  # one set; check() names a missing or extra key
    plain = [k for k in data if SET_SEPARATOR not in k]
    if plain:
        raise UsageError(
            f"{option} {path}: {_plural('key', plain)} {', '.join(map(repr, plain))} "
            f"{'has' if len(plain) == 1 else 'have'} no '<set>/' prefix while others do; use input "
            f"names as keys for one set, or '<set>/<input>' for every key; the model's inputs are "
            f"{', '.join(names)}"
        )
    grouped: dict[str, dict[str, np.ndarray]] = {}
    for key, value in data.items():
        group, _, name = key.partition(SET_SEPARATOR)  # an input's own name may hold a '/'
        grouped.setdefault(group, {})[name] = value
    order = sorted(grouped, key=lambda g: (len(g), g))  # "2" before "10"
    return [DataSet(f"{path} set {g!r}", grouped[g]) for g in order]


def _read_npy(path: Path, option: str, names: list[str], spending: DataBudget) -> Feeds:
    if len(names) != 1:
        raise UsageError(
            f"{option} {path}: a .npy holds one array, but the model has {len(names)} inputs "
            f"({', '.join(names)}); give a .npz with one array per input name"
        )
    spending.npy(path)
    try:
        return {names[0]: np.load(path, allow_pickle=False)}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{option} {path}: not a readable .npy file: {exc}") from exc


def _set_number(path: Path) -> int:
    tail = path.stem.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _dtype_checked(value: np.ndarray, spec: InputSpec, label: str) -> np.ndarray:
    if spec.dtype is None:
        return value
    if value.dtype == spec.dtype:
        return value
    if value.dtype.newbyteorder("=") == spec.dtype:  # the same numbers in the other byte order
        return value.astype(spec.dtype)
    if spec.dtype == np.dtype(object) and value.dtype.kind in "US":
        # A STRING input: .npz holds texts as fixed-width str or bytes (an object array would need pickle).
        texts = np.char.decode(value, "utf-8") if value.dtype.kind == "S" else value
        return texts.astype(object)
    raise UsageError(
        f"{label}: input {spec.name!r} is {value.dtype} {list(value.shape)}; the model expects "
        f"{spec.describe()} (convert it, e.g. array.astype(np.{spec.dtype.name}))"
    )


def _signature_text(specs: list[InputSpec]) -> str:
    return ", ".join(f"{s.name!r} ({s.describe()})" for s in specs)


def _plural(word: str, items: list) -> str:
    return word if len(items) == 1 else word + "s"
