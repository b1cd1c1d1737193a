"""Compare two sets of outputs: error figures per output and the task metric.

Every figure names where it was found, so a failure says which output,
which element, what was expected and what came.
"""

from __future__ import annotations

from typing import Any, Mapping, Union, final

import numpy as np
from typing_extensions import NotRequired, TypedDict

from onnxport.accuracy.measured import ShapeMismatch
from onnxport.accuracy.tolerance import Tolerance
from onnxport.json_fields import Scalar

Outputs = dict[str, np.ndarray]


class ElementMismatch(TypedDict):
    index: list[int]
    expected: Scalar
    got: Scalar


@final  # so that `"shape_mismatch" in errors` tells the two apart
class SetErrors(TypedDict):
    """One output's errors on one golden set; measure.py merges the sets into the manifest's OutputErrors."""

    max_abs: float
    mean_abs: float
    max_rel: float
    nonfinite: int
    scale: float
    mismatches: NotRequired[int]
    first_mismatch: NotRequired[ElementMismatch]


@final
class ShapeErrors(TypedDict):
    """Shapes that differ: no element compared."""

    shape_mismatch: ShapeMismatch


Errors = Union[SetErrors, ShapeErrors]


def output_errors(expected: np.ndarray, got: np.ndarray, tolerance: Tolerance | None = None) -> Errors:
    """Max/mean absolute and max relative error, plus the first element outside tolerance."""
    if expected.shape != got.shape:
        return {"shape_mismatch": {"expected": list(expected.shape), "got": list(got.shape)}}
    exp = expected.astype(np.float64)
    act = got.astype(np.float64)
    # NaN equals NaN, and an infinity equals the same infinity.
    same = (np.isnan(exp) & np.isnan(act)) | (np.isinf(exp) & (exp == act))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(exp - act))
    # A non-finite value where the reference is finite is always an error.
    nonfinite = int((~np.isfinite(act) & np.isfinite(exp)).sum())
    finite = np.isfinite(diff) & np.isfinite(exp)
    report: SetErrors = {
        "max_abs": float(diff[finite].max()) if finite.any() else 0.0,
        "mean_abs": float(diff[finite].mean()) if finite.any() else 0.0,
        "max_rel": float((diff[finite] / np.maximum(np.abs(exp[finite]), 1e-12)).max()) if finite.any() else 0.0,
        "nonfinite": nonfinite,
        # The reference's largest magnitude, to judge errors relative to the output's scale.
        "scale": float(np.abs(exp[np.isfinite(exp)]).max()) if np.isfinite(exp).any() else 0.0,
    }
    if np.issubdtype(expected.dtype, np.integer) or expected.dtype == np.bool_:
        report["mismatches"] = int((expected != got).sum())
        bad = expected != got
    elif tolerance is not None and tolerance.elementwise:
        bad = outside(exp, act, tolerance)
    else:
        bad = None
    if bad is not None and bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        report["first_mismatch"] = {
            "index": list(index),
            "expected": _scalar(expected[index]),
            "got": _scalar(got[index]),
        }
    return report


def outside(expected: np.ndarray, got: np.ndarray, tolerance: Tolerance) -> np.ndarray:
    """Float elements that break the tolerance (the rule in accuracy/tolerance.py)."""
    e, g = expected.astype(np.float64), got.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # Equal values pass whatever the bounds (0 and 0 have no ratio); so does NaN against NaN.
        ok = (e == g) | (np.isnan(e) & np.isnan(g))
        finite = np.isfinite(e) & np.isfinite(g)
        if tolerance.abs is not None:
            ok |= finite & (np.abs(e - g) <= tolerance.abs)
        if tolerance.rel is not None:
            ratio = g / e
            ok |= finite & (ratio > 0) & (np.maximum(ratio, 1 / ratio) <= 1 + tolerance.rel)
    return ~ok


def compare(expected: Outputs, got: Outputs, tolerance: Tolerance | None = None) -> dict[str, Errors]:
    return {name: output_errors(expected[name], got[name], tolerance) for name in expected if name in got}


def within(errors: Mapping[str, Mapping[str, Any]]) -> bool:
    """True when no output has a mismatch, a shape difference or a new non-finite value."""
    return all(
        "first_mismatch" not in e and "shape_mismatch" not in e and e.get("nonfinite", 0) == 0 for e in errors.values()
    )


def task_metric(task: str, expected: np.ndarray, got: np.ndarray) -> dict[str, float]:
    """top-1 agreement for classifiers, cosine similarity for embeddings, scaled error otherwise."""
    if expected.shape != got.shape:
        return {}
    if task == "classification":
        return {"top1_agreement": float((expected.argmax(-1) == got.argmax(-1)).mean())}
    if task == "embedding":
        e = expected.reshape(len(expected), -1).astype(np.float64)
        g = got.reshape(len(got), -1).astype(np.float64)
        cos = (e * g).sum(1) / np.maximum(np.linalg.norm(e, axis=1) * np.linalg.norm(g, axis=1), 1e-12)
        return {"cosine_min": float(cos.min()), "cosine_mean": float(cos.mean())}
    if task == "detection-map":
        # One flipped pixel must not fail a heat map that is thresholded downstream: judge the mean.
        return {"scaled_mean_abs": scaled_mean_abs(expected, got), "scaled_max_abs": scaled_max_abs(expected, got)}
    if task == "sequence":
        # Recognizers decode the top class at every step: the share of steps that keep it.
        return {"step_agreement": float((expected.argmax(-1) == got.argmax(-1)).mean()) if expected.size else 1.0}
    return {"scaled_max_abs": scaled_max_abs(expected, got)}


def scaled_max_abs(expected: np.ndarray, got: np.ndarray) -> float:
    """Largest absolute error divided by the reference's largest magnitude (0 = identical)."""
    return _scaled(expected, got, np.max)


def scaled_mean_abs(expected: np.ndarray, got: np.ndarray) -> float:
    """Mean absolute error divided by the reference's largest magnitude."""
    return _scaled(expected, got, np.mean)


def _scaled(expected: np.ndarray, got: np.ndarray, reduce) -> float:
    exp = expected.astype(np.float64)
    scale = float(np.abs(exp[np.isfinite(exp)]).max()) if np.isfinite(exp).any() else 0.0
    with np.errstate(invalid="ignore"):
        diff = np.abs(exp - got.astype(np.float64))
    if not np.isfinite(diff).all():
        return float("inf")
    return float(reduce(diff) / max(scale, 1e-12)) if diff.size else 0.0


def accuracy(labels: np.ndarray, scores: np.ndarray) -> float:
    return float((scores.argmax(-1) == labels).mean())


def _scalar(value: Any) -> Any:
    item = value.item() if hasattr(value, "item") else value
    if isinstance(item, float) and not np.isfinite(item):
        return str(item)
    return item
