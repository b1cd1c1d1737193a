"""The one judgement of a runtime's result for a variant: the import's rule, applied to a browser.

A file that computes in fp32 is judged element by element against the server's output of the same
file, within the runtime's floor (onnxruntime-web's own, accuracy/browser_tolerances.py "fp32/<runtime>"), and
by its task metric within that floor. A file that computes in fp16 or int8 is judged as the import
judged it: its task metric against fp32's output on the same inputs, within its budget
(measure.verdict + budgets.check, the very functions the import calls). Two int8 (or fp16)
implementations round differently, so the element-wise difference to the server's output of the same
file is reported as a diagnostic, never as the verdict. A missing output, a shape that differs and
inf/NaN where the reference is finite always fail.

web/lib/verification/judgement.js is this rule in JavaScript; tests/vectors/judgement_vectors.json pins both, reasons
included: a reason is data (accuracy/reasons.py), which each language renders in its own words.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Literal, Mapping, cast

import numpy as np
from typing_extensions import TypedDict

from onnxport.accuracy import budgets, measure, reasons
from onnxport.accuracy.measured import OutputErrors
from onnxport.accuracy.tolerance import Tolerance
from onnxport.json_boundary import JsonObject

Outputs = Mapping[str, np.ndarray]
ARITHMETICS = budgets.ARITHMETICS
SERVER: reasons.Against = "server_run"  # the floor's reference, in reasons


class Judgement(TypedDict):
    """One runtime's result judged (judge()), as the JavaScript twin returns it and the check's rows carry it."""

    ok: bool
    reason: reasons.Reason | None  # data: reasons.render() gives its words
    basis: Literal["floor", "budget"]
    metric: dict[str, float]
    outputs: dict[str, OutputErrors] | None
    diagnostic: reasons.ElementwiseDiagnostic | None  # elementwise_diagnostic(): shown, not read


def judge(
    task: str,
    metric_output: str | None,
    arithmetic: str,
    budget: Tolerance | Mapping[str, Any] | None,
    floor: Tolerance | Mapping[str, Any] | None,
    got: Outputs,
    fp32: Outputs | None,
    same_variant: Outputs | None,
) -> Judgement:
    """{ok, reason, basis: "floor" | "budget", metric, outputs, diagnostic}.

    got: the runtime's outputs; fp32: the server's fp32 variant on the same inputs (needed unless
    arithmetic is fp32); same_variant: the server's output of the same file (needed for fp32; for
    fp16/int8 only the diagnostic reads it). `outputs` holds the element-wise errors against
    same_variant (with the floor as the element rule), whatever the basis.
    """
    if arithmetic not in ARITHMETICS:
        raise ValueError(f"arithmetic must be one of {', '.join(ARITHMETICS)}, got {arithmetic!r}")
    floor_t = tolerance(floor)
    if arithmetic == "fp32":
        if same_variant is None:
            raise ValueError(
                "an fp32 file is judged against the server's output of the same file: same_variant is needed"
            )
        return _by_floor(task, metric_output, floor_t, got, same_variant)
    if fp32 is None:
        raise ValueError(f"an {arithmetic} file is judged against fp32's outputs on the same inputs: fp32 is needed")
    if budget is None:
        raise ValueError(f"an {arithmetic} file is judged within its budget: budget is needed")
    return _by_budget(task, metric_output, arithmetic, tolerance(budget), floor_t, got, fp32, same_variant)


def _by_floor(task: str, metric_output: str | None, floor: Tolerance, got: Outputs, same: Outputs) -> Judgement:
    vs = measure.against([dict(same)], [dict(got)], task, metric_output, floor)
    metric = cast(dict[str, float], vs.get("metric") or {})  # Metric's figures, every one a float
    reason = (
        missing(same, got)
        or measure.broken(vs, exact_integers=True, reference=SERVER)
        or outside_floor(vs["outputs"], floor)
        or budgets.shortfall(floor, task, metric, against=SERVER, limit="floor")
    )
    return {
        "ok": reason is None,
        "reason": reason,
        "basis": "floor",
        "metric": metric,
        "outputs": vs["outputs"],
        "diagnostic": None,
    }


def _by_budget(
    task: str,
    metric_output: str | None,
    arithmetic: str,
    budget: Tolerance,
    floor: Tolerance,
    got: Outputs,
    fp32: Outputs,
    same: Outputs | None,
) -> Judgement:
    vs_fp32 = measure.against([dict(fp32)], [dict(got)], task, metric_output)
    reason = missing(fp32, got) or measure.rejection(arithmetic, budget, task, vs_fp32)
    outputs: dict[str, OutputErrors] | None = None
    diagnostic: reasons.ElementwiseDiagnostic | None = None
    if same is not None:
        elementwise = floor if floor.elementwise else None
        outputs = measure.against([dict(same)], [dict(got)], task, None, elementwise)["outputs"]
        diagnostic = elementwise_diagnostic(outputs)
        # A shape the server's own run of this file does not have is wrong whatever fp32 says.
        reason = (
            reason
            or missing(same, got)
            or measure.broken({"outputs": outputs, "within_tolerance": None}, exact_integers=False, reference=SERVER)
        )
    return {
        "ok": reason is None,
        "reason": reason,
        "basis": "budget",
        "metric": measure.judged_metric(vs_fp32),
        "outputs": outputs,
        "diagnostic": diagnostic,
    }


def fp32_floor(table_floor: Mapping[str, Any], validation: Mapping[str, Any] | None) -> JsonObject:
    """The floor an fp32 file is judged by in one runtime: the tolerance table's "fp32/<runtime>" entry
    (onnxruntime-web's floors, made for single operators) loosened to the model's own export tolerance
    (the manifest's `validation.tolerance`) where that is looser: the build already called such a
    difference between fp32 onnxruntime and the source the same model. A floor the user set
    (`onnxport check --tolerances`, marked "overridden") is kept as given.
    web/lib/verification/judgement.js fp32Floor."""
    if table_floor.get("overridden"):
        return dict(table_floor)
    own = (validation or {}).get("tolerance") or {}
    floor = dict(table_floor)
    for key in ("abs", "rel"):
        if own.get(key) is not None:
            floor[key] = own[key] if floor.get(key) is None else max(floor[key], own[key])
    return floor


def missing(reference: Outputs, got: Outputs) -> reasons.MissingReason | None:
    name = next((name for name in reference if name not in got), None)
    return None if name is None else {"code": "output_missing", "output": name}


def outside_floor(outputs: Mapping[str, OutputErrors], floor: Tolerance) -> reasons.FloorReason | None:
    """The first float element outside the floor, with where, what and the bounds."""
    for name, errors in outputs.items():
        first = errors.get("first_mismatch")
        if first:
            return {
                "code": "outside_floor",
                "output": name,
                "index": list(first["index"]),
                "expected": reasons.number(first["expected"]),
                "got": reasons.number(first["got"]),
                "max_abs": errors["max_abs"],
                "floor_abs": floor.abs,
                "floor_rel": floor.rel,
            }
    return None


def elementwise_diagnostic(outputs: Mapping[str, OutputErrors]) -> reasons.ElementwiseDiagnostic:
    """How far the result is from the server's output of the same file, element by element: the
    largest difference, where the first element outside the floor is, and the abs bound the
    element rule would have needed (the largest difference itself); `text` is its words (reasons.render)."""
    sized = [(name, e) for name, e in outputs.items() if "shape_mismatch" not in e]
    worst_name, worst_abs = None, 0.0
    for name, e in sized:
        if worst_name is None or e["max_abs"] > worst_abs:
            worst_name, worst_abs = name, e["max_abs"]
    first = next(((name, e["first_mismatch"]) for name, e in sized if "first_mismatch" in e), None)
    diagnostic: reasons.ElementwiseDiagnostic = {
        "code": "elementwise_diagnostic",
        "max_abs": worst_abs,
        "output": worst_name,
        "first_outside_floor": (
            {
                "output": first[0],
                "index": list(first[1]["index"]),
                "expected": reasons.number(first[1]["expected"]),
                "got": reasons.number(first[1]["got"]),
            }
            if first
            else None
        ),
        "needed_abs": worst_abs,
    }
    diagnostic["text"] = reasons.render(diagnostic)
    return diagnostic


_FIELDS = {f.name for f in fields(Tolerance)}


def tolerance(value: Tolerance | Mapping[str, Any] | None) -> Tolerance:
    """A Tolerance from the manifest's or the table's JSON (unknown keys ignored, numbers as floats,
    so reasons print 1.0 as the JavaScript twin does)."""
    if value is None:
        return Tolerance()
    if isinstance(value, Tolerance):
        value = value.as_json()
    known: dict[str, float | str | None] = {
        k: (v if k == "why" or v is None else float(v)) for k, v in value.items() if k in _FIELDS
    }
    return Tolerance(**known)  # type: ignore[arg-type]  # each field's own type, as the JSON gave it
