"""Measure a variant against fp32 and against the source on the golden inputs."""

from __future__ import annotations

from typing import cast

import numpy as np

from onnxport.accuracy import budgets, compare, reasons
from onnxport.accuracy.measured import Measurement, Metric, OutputErrors
from onnxport.accuracy.tolerance import Tolerance

Feeds = dict[str, np.ndarray]


def against(
    reference: list[Feeds],
    got: list[Feeds],
    task: str,
    metric_output: str | None,
    tolerance: Tolerance | None = None,
) -> Measurement:
    """Errors per output and the task metric, over every golden set."""
    per_set = [compare.compare(ref, out, tolerance) for ref, out in zip(reference, got)]
    outputs = _merge_errors(per_set)
    within = compare.within(outputs) if tolerance is not None and tolerance.elementwise else None
    if not metric_output:
        return {"outputs": outputs, "within_tolerance": within}
    metrics = [
        compare.task_metric(task, ref[name], out[name])
        for ref, out in zip(reference, got)
        for name in _metric_outputs(task, metric_output, ref)
        if name in out
    ]
    # task_metric's figures are Metric's keys, by task (compare.task_metric).
    return {"outputs": outputs, "metric": cast(Metric, _merge_metrics(metrics)), "within_tolerance": within}


def _metric_outputs(task: str, metric_output: str, reference: Feeds) -> list[str]:
    """The outputs the task metric reads. A detector's heads (scores, boxes, landmarks) are read
    together downstream, so detection-map judges every float output by the worst of them."""
    if task == "detection-map":
        return [name for name, value in reference.items() if np.asarray(value).dtype.kind == "f"]
    return [metric_output] if metric_output in reference else []


def accuracy(labels: np.ndarray | None, got: list[Feeds], metric_output: str | None) -> float | None:
    if labels is None or not metric_output or len(got) != 1:
        return None
    return compare.accuracy(labels, got[0][metric_output])


def verdict(
    arithmetic: str, budget: Tolerance, task: str, vs_fp32: Measurement, *, bound: reasons.Limit = "budget"
) -> str | None:
    """The reason a variant is rejected, in words (the manifest's `reason`), or None when it may be served:
    reasons.render of rejection()."""
    reason = rejection(arithmetic, budget, task, vs_fp32, bound=bound)
    return None if reason is None else reasons.render(reason)


def rejection(
    arithmetic: str, budget: Tolerance, task: str, vs_fp32: Measurement, *, bound: reasons.Limit = "budget"
) -> reasons.Rejection | None:
    """The reason a variant is rejected, as data (accuracy/reasons.py), or None when it may be served.

    `arithmetic` is what the file computes (a variant's name works the same way: only "fp32" matters,
    whose integer outputs must equal the export's). The import and the browser judgement
    (accuracy/judgement.py, web/lib/verification/judgement.js) both call this rule."""
    return broken(vs_fp32, exact_integers=arithmetic == "fp32") or budgets.shortfall(
        budget, task, judged_metric(vs_fp32), limit=bound
    )


def broken(vs: Measurement, *, exact_integers: bool, reference: reasons.Against = "fp32") -> reasons.Rejection | None:
    """What fails whatever the budget: a shape that differs, inf/NaN where `reference` ("fp32" or "server_run") is
    finite, and (with exact_integers) integer outputs that differ."""
    against = reference
    for name, errors in vs["outputs"].items():
        if "shape_mismatch" in errors:
            shapes = errors["shape_mismatch"]
            return {
                "code": "shape_mismatch",
                "output": name,
                "shape": list(shapes["got"]),
                "expected_shape": list(shapes["expected"]),
                "against": against,
            }
        if errors.get("nonfinite"):
            return {"code": "nonfinite", "output": name, "count": int(errors["nonfinite"]), "against": against}
        if exact_integers and errors.get("mismatches"):
            return {"code": "integer_mismatch", "output": name, "count": int(errors["mismatches"]), "against": against}
    return None


def judged_metric(vs: Measurement) -> dict[str, float]:
    """The figures a budget judges: the task metric, or without one every output's scaled error."""
    metric = cast(dict[str, float], vs.get("metric") or {})  # Metric's figures, every one a float
    if not metric:
        worst = max(
            (e.get("max_abs", 0.0) / max(e.get("scale", 1.0), 1e-12) for e in vs["outputs"].values()), default=0.0
        )
        metric = {"scaled_max_abs": worst}
    return metric


def _merge_errors(per_set: list[dict[str, compare.Errors]]) -> dict[str, OutputErrors]:
    merged: dict[str, OutputErrors] = {}
    for set_index, errors in enumerate(per_set):
        for name, e in errors.items():
            m = merged.setdefault(name, {"max_abs": 0.0, "mean_abs": 0.0, "max_rel": 0.0, "nonfinite": 0, "scale": 0.0})
            if "shape_mismatch" in e:
                m.setdefault("shape_mismatch", e["shape_mismatch"])
                continue
            m["max_abs"] = max(m["max_abs"], e["max_abs"])
            m["max_rel"] = max(m["max_rel"], e["max_rel"])
            m["mean_abs"] += e["mean_abs"] / len(per_set)
            m["nonfinite"] += e["nonfinite"]
            m["scale"] = max(m["scale"], e.get("scale", 0.0))
            if "mismatches" in e:
                m["mismatches"] = m.get("mismatches", 0) + e["mismatches"]
            if "first_mismatch" in e and "first_mismatch" not in m:
                m["first_mismatch"] = {"set": set_index, **e["first_mismatch"]}
    return merged


def _merge_metrics(metrics: list[dict[str, float]]) -> dict[str, float]:
    if not metrics:
        return {}
    merged: dict[str, float] = {}
    for key in metrics[0]:
        values = [m[key] for m in metrics if key in m]
        if key.endswith("_min"):
            merged[key] = float(min(values))
        elif key.startswith("scaled_"):
            merged[key] = float(max(values))
        else:
            merged[key] = float(np.mean(values))
    return merged
