"""Golden inputs and expected outputs in ONNX's test_data_set layout.

`test_data_set_N/input_K.pb` and `output_K.pb` hold TensorProtos, K in the
order of the model's inputs and outputs: the layout of ONNX's backend tests
and model zoo, so other tools can reuse them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from onnxport.errors import ModelFileError
from onnxport.repository.manifest import ModelEntry

Feeds = dict[str, np.ndarray]


def write_set(folder: Path, index: int, inputs: Feeds, outputs: Feeds) -> None:
    target = folder / f"test_data_set_{index}"
    target.mkdir(parents=True, exist_ok=True)
    for prefix, tensors in (("input", inputs), ("output", outputs)):
        for k, (name, value) in enumerate(tensors.items()):
            proto = numpy_helper.from_array(np.asarray(value), name)
            (target / f"{prefix}_{k}.pb").write_bytes(proto.SerializeToString(deterministic=True))


def read_sets(folder: Path, input_names: list[str], output_names: list[str]) -> list[tuple[Feeds, Feeds]]:
    """Every test_data_set_* under folder, as (inputs, outputs) keyed by the model's names."""
    sets = []
    for set_dir in sorted(folder.glob("test_data_set_*"), key=lambda p: _set_number(p)):
        inputs = _read_tensors(set_dir, "input", input_names)
        outputs = _read_tensors(set_dir, "output", output_names)
        sets.append((inputs, outputs))
    return sets


def read_golden(repository_root: Path, entry: ModelEntry) -> list[tuple[Feeds, Feeds]]:
    """The golden sets of a manifest entry, keyed by its input and output names."""
    return read_sets(
        repository_root / entry["golden"]["path"],
        [i["name"] for i in entry["inputs"]],
        [o["name"] for o in entry["outputs"]],
    )


def _read_tensors(set_dir: Path, prefix: str, names: list[str]) -> Feeds:
    files = sorted(set_dir.glob(f"{prefix}_*.pb"), key=_set_number)
    if prefix == "input" and len(files) != len(names):
        raise ModelFileError(
            f"{set_dir}: {len(files)} {prefix} files for a model with {len(names)} {prefix}s ({', '.join(names)})"
        )
    tensors: Feeds = {}
    for k, path in enumerate(files[: len(names)]):
        proto = onnx.TensorProto()
        try:
            proto.ParseFromString(path.read_bytes())
            tensors[names[k]] = numpy_helper.to_array(proto)
        except Exception as exc:
            raise ModelFileError(f"{path}: not a readable ONNX TensorProto: {exc}") from exc
    return tensors


def _set_number(path: Path) -> int:
    tail = path.stem.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 0
