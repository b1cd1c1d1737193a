"""Why a result failed, as data: a code and the numbers and names it needs, and Python's words for it.

The codes are defined here, once. A reason is a JSON object (`{"code": "top1_below_bound", "value": 0.75,
"bound": 0.97, "against": "fp32", "limit": "budget"}`), so both languages judge alike and each renders its own
words: `render()` here (the words the manifest, the check's report and the CLI print), `renderReason()` in
web/lib/verification/reasons.js (the browser's). tests/vectors/judgement_vectors.json pins the data, not the
words. Numbers that JSON cannot hold (inf, NaN) are written as "Infinity", "-Infinity" and "NaN". The manifest
keeps an over-budget variant's reason as data too (`reason_data`), so its JSON Schema carries these types.
"""

from __future__ import annotations

import math
from typing import Literal, Union, get_args, get_type_hints

from pydantic import with_config
from typing_extensions import NotRequired, TypedDict

from onnxport.json_fields import STRICT

Number = Union[float, str]  # a float, or "Infinity", "-Infinity", "NaN"
# What a result was measured against: fp32's output, or the server's run of the same file.
Against = Literal["fp32", "server_run"]
Limit = Literal["budget", "floor", "serving_bound"]  # which bound it broke


@with_config(STRICT)
class BoundReason(TypedDict):
    """A task metric outside its bound (accuracy/budgets.py shortfall)."""

    code: Literal[
        "top1_below_bound",
        "cosine_below_bound",
        "step_agreement_below_bound",
        "mean_error_above_bound",
        "max_error_above_bound",
    ]
    value: Number
    bound: float
    against: Against
    limit: Limit
    share: NotRequired[float]  # the serving bound's share of the budget


@with_config(STRICT)
class MissingReason(TypedDict):
    code: Literal["output_missing"]
    output: str


@with_config(STRICT)
class ShapeReason(TypedDict):
    code: Literal["shape_mismatch"]
    output: str
    shape: list[int]
    expected_shape: list[int]
    against: Against


@with_config(STRICT)
class NonfiniteReason(TypedDict):
    code: Literal["nonfinite"]
    output: str
    count: int
    against: Against


@with_config(STRICT)
class IntegerReason(TypedDict):
    code: Literal["integer_mismatch"]
    output: str
    count: int
    against: Against


@with_config(STRICT)
class FloorReason(TypedDict):
    code: Literal["outside_floor"]
    output: str
    index: list[int]
    expected: Number
    got: Number
    max_abs: float
    floor_abs: float | None
    floor_rel: float | None


@with_config(STRICT)
class FirstOutside(TypedDict):
    output: str
    index: list[int]
    expected: Number
    got: Number


@with_config(STRICT)
class ElementwiseDiagnostic(TypedDict):
    """How far a result is from the server's run of the same file, element by element: shown, never the verdict."""

    code: Literal["elementwise_diagnostic"]
    max_abs: float
    output: str | None
    first_outside_floor: FirstOutside | None
    needed_abs: float
    text: NotRequired[str]  # render()'s words, kept for the readers of the check's rows


Rejection = Union[BoundReason, ShapeReason, NonfiniteReason, IntegerReason]  # the import's (measure.rejection)
Reason = Union[Rejection, MissingReason, FloorReason]  # a judgement's (accuracy/judgement.py)
AnyReason = Union[Reason, ElementwiseDiagnostic]

KINDS = (BoundReason, MissingReason, ShapeReason, NonfiniteReason, IntegerReason, FloorReason, ElementwiseDiagnostic)
# Every code, read from the types' `code` Literals: tests/vectors/reason_vectors.json holds them and a reason of
# each, which web/lib/verification/reasons.js renders too (its REASON_CODES must be this list).
CODES: tuple[str, ...] = tuple(code for kind in KINDS for code in get_args(get_type_hints(kind)["code"]))

_AGAINST = {"fp32": "fp32", "server_run": "the server"}


def number(x: float | int | str) -> Number:
    """A value as a reason holds it: JSON's number (an integer stays one), or text for inf and NaN (from a
    float, or from compare.py's "inf" and "nan")."""
    if isinstance(x, int):  # bool too: an integer output's value, printed as it is
        return x
    f = float(x)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def _float(x: Number | None) -> float | None:
    """A reason's float as Python prints it: JSON from the browser writes 1.0 as 1, and inf as text."""
    if x is None:
        return None
    return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(x, x)) if isinstance(x, str) else float(x)


def _limit(reason: BoundReason) -> str:
    if reason["limit"] == "serving_bound":
        return f"the serving bound ({round(reason.get('share', 1.0) * 100)}% of the budget)"
    return reason["limit"]


def render(reason: AnyReason) -> str:
    """Python's words for a reason: the sentence the manifest, the check's report and the CLI have always printed."""
    code = reason["code"]
    if code not in CODES:
        raise ValueError(f"unknown reason code {code!r}: expected one of {', '.join(CODES)}")
    if code == "elementwise_diagnostic":
        return _diagnostic(reason)  # type: ignore[arg-type]  # the code says which TypedDict it is
    if code == "output_missing":
        return f"output {reason['output']!r} is missing"  # type: ignore[typeddict-item]
    if code == "outside_floor":
        r: FloorReason = reason  # type: ignore[assignment]
        return (
            f"output {r['output']!r} at [{', '.join(map(str, r['index']))}]: expected {_float(r['expected'])}, "
            f"got {_float(r['got'])} (max abs {r['max_abs']:.3g}; "
            f"floor abs {_float(r['floor_abs'])}, rel {_float(r['floor_rel'])})"
        )
    if code in ("shape_mismatch", "nonfinite", "integer_mismatch"):
        return _broken(reason)  # type: ignore[arg-type]
    return _bound(reason)  # type: ignore[arg-type]


def _broken(reason: ShapeReason | NonfiniteReason | IntegerReason) -> str:
    against = _AGAINST[reason["against"]]
    if reason["code"] == "shape_mismatch":
        return f"output {reason['output']!r} has shape {reason['shape']}, {against} has {reason['expected_shape']}"
    if reason["code"] == "nonfinite":
        return f"output {reason['output']!r} has {reason['count']} inf/NaN values where {against} is finite"
    return f"integer output {reason['output']!r} differs from {against} in {reason['count']} elements"


def _bound(reason: BoundReason) -> str:
    against, value, bound = _AGAINST[reason["against"]], _float(reason["value"]), _float(reason["bound"])
    limit = _limit(reason)
    code = reason["code"]
    if code == "top1_below_bound":
        return f"top-1 agreement with {against} {value:.4f} < {limit} {bound}"
    if code == "cosine_below_bound":
        return f"min cosine similarity to {against} {value:.5f} < {limit} {bound}"
    if code == "step_agreement_below_bound":
        return f"per-step top-1 agreement with {against} {value:.4f} < {limit} {bound}"
    if code == "mean_error_above_bound":
        return f"mean error / max |{against}| {value:.3g} > {limit} {bound}"
    return f"max error / max |{against}| {value:.3g} > {limit} {bound}"


def _diagnostic(d: ElementwiseDiagnostic) -> str:
    text = f"element-wise vs the server's output of this file: max abs {d['max_abs']:.3g}"
    if d["output"] is not None:
        text += f" in {d['output']!r}"
    first = d["first_outside_floor"]
    if first:
        text += f", first outside the floor at {first['output']}[{', '.join(map(str, first['index']))}]"
    # An abs bound of 0 says nothing: equal outputs are said to be equal.
    return text + (
        f"; the element rule would have needed abs {d['needed_abs']:.3g}"
        if d["max_abs"] > 0
        else ": the outputs match exactly"
    )
