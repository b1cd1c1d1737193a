"""Calibration inputs for an imported model: the user's own (`--calibration`), else its golden inputs.

Two layouts: a folder in ONNX test-set layout (test_data_set_*/input_*.pb, outputs ignored), or a
.npz file with one array per model input (one batch), or `<k>/<input>` keys for several batches.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np

from onnxport.errors import ModelFileError
from onnxport.recipe import Feeds
from onnxport.repository import testdata


def load(path: Path, input_names: list[str]) -> list[Feeds]:
    """The calibration batches at path, keyed by the model's input names; errors name the file."""
    if path.is_dir():
        batches = [inputs for inputs, _ in testdata.read_sets(path, input_names, [])]
        if not batches:
            raise ModelFileError(f"calibration folder {path}: no test_data_set_* folders in it")
        return batches
    if path.suffix != ".npz":
        raise ModelFileError(f"calibration {path}: expected a folder of test_data_set_* or a .npz file")
    try:
        with np.load(path, allow_pickle=False) as arrays:
            data = {key: arrays[key] for key in arrays.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"calibration {path}: not a readable .npz file: {exc}") from exc
    return _batches(path, data, input_names)


def _batches(path: Path, data: dict[str, np.ndarray], input_names: list[str]) -> list[Feeds]:
    if set(data) == set(input_names):
        return [data]
    grouped: dict[str, Feeds] = {}
    for key, value in data.items():
        batch, _, name = key.rpartition("/")
        if not batch or name not in input_names:
            raise ModelFileError(
                f"calibration {path}: key {key!r} is neither an input name nor '<batch>/<input>'; "
                f"the model's inputs are {', '.join(input_names)}")
        grouped.setdefault(batch, {})[name] = value
    for batch, feeds in grouped.items():
        missing = sorted(set(input_names) - set(feeds))
        if missing:
            raise ModelFileError(f"calibration {path}: batch {batch!r} has no array for input(s) {', '.join(missing)}")
    return [grouped[b] for b in sorted(grouped, key=lambda b: (len(b), b))]


def digest(path: Path | None) -> str | None:
    """What the build key needs to know of the calibration data."""
    if path is None:
        return None
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    sha = hashlib.sha256()
    for file in files:
        sha.update(str(file.relative_to(path) if path.is_dir() else file.name).encode() + b"\0")
        sha.update(hashlib.sha256(file.read_bytes()).digest())
    return sha.hexdigest()
