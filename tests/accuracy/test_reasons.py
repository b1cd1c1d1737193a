"""accuracy/reasons.py: the codes, defined once, and Python's words for each.

tests/vectors/reason_vectors.json holds a reason of every code with these words; web/lib/verification/reasons.js
renders the same reasons in its own (tests/js/lib/verification/test_reasons.mjs)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from onnxport.accuracy import budgets, reasons
from onnxport.accuracy.tolerance import Tolerance

DATA = Path(__file__).parent.parent / "vectors"
VECTORS = json.loads((DATA / "reason_vectors.json").read_text())


def _generator():
    spec = importlib.util.spec_from_file_location("make_reason_vectors", DATA / "make_reason_vectors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_vector_file_is_what_the_generator_writes_and_holds_every_code():
    assert _generator().build() == VECTORS
    assert VECTORS["codes"] == list(reasons.CODES)
    assert {r["reason"]["code"] for r in VECTORS["reasons"]} == set(reasons.CODES)


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        (
            {"code": "top1_below_bound", "value": 0.75, "bound": 0.97, "against": "fp32", "limit": "budget"},
            "top-1 agreement with fp32 0.7500 < budget 0.97",
        ),
        (
            {"code": "cosine_below_bound", "value": "NaN", "bound": 1e-05, "against": "server_run", "limit": "floor"},
            "min cosine similarity to the server nan < floor 1e-05",
        ),
        (
            {"code": "mean_error_above_bound", "value": 0.0123456, "bound": 0.01, "against": "fp32", "limit": "budget"},
            "mean error / max |fp32| 0.0123 > budget 0.01",
        ),
        ({"code": "output_missing", "output": "probabilities"}, "output 'probabilities' is missing"),
        (
            {
                "code": "shape_mismatch",
                "output": "y",
                "shape": [1, 3],
                "expected_shape": [1, 2],
                "against": "server_run",
            },
            "output 'y' has shape [1, 3], the server has [1, 2]",
        ),
        (
            {
                "code": "outside_floor",
                "output": "y",
                "index": [0, 2],
                "expected": 1.0,
                "got": "Infinity",
                "max_abs": 0.5,
                "floor_abs": 1e-4,
                "floor_rel": None,
            },
            "output 'y' at [0, 2]: expected 1.0, got inf (max abs 0.5; floor abs 0.0001, rel None)",
        ),
    ],
)
def test_python_words_as_the_manifest_and_the_check_have_always_printed_them(reason, words):
    assert reasons.render(reason) == words


@pytest.mark.parametrize("case", VECTORS["reasons"], ids=lambda c: c["python"][:60])
def test_every_vector_renders_as_the_file_says(case):
    assert reasons.render(case["reason"]) == case["python"]


def test_the_serving_bound_is_named_with_its_share_of_the_budget():
    reason = budgets.shortfall(
        budgets.serving_budget("int8"), "detection-map", {"scaled_mean_abs": 0.0095}, limit=budgets.SERVING_BOUND
    )
    assert reason == {
        "code": "mean_error_above_bound",
        "value": 0.0095,
        "bound": 0.009,
        "against": "fp32",
        "limit": "serving_bound",
        "share": 0.9,
    }
    assert reasons.render(reason) == "mean error / max |fp32| 0.0095 > the serving bound (90% of the budget) 0.009"


def test_numbers_json_cannot_hold_are_text():
    assert [reasons.number(x) for x in (0.5, float("inf"), float("-inf"), float("nan"), "inf", "nan", 3)] == [
        0.5,
        "Infinity",
        "-Infinity",
        "NaN",
        "Infinity",
        "NaN",
        3,
    ]
    assert budgets.shortfall(Tolerance(scaled_max_abs=0.1), "other", {"scaled_max_abs": float("nan")}) == {
        "code": "max_error_above_bound",
        "value": "NaN",
        "bound": 0.1,
        "against": "fp32",
        "limit": "budget",
    }


def test_an_unknown_code_is_named():
    with pytest.raises(ValueError, match="unknown reason code 'too_slow'"):
        reasons.render({"code": "too_slow"})  # type: ignore[typeddict-item]


def test_a_reason_read_back_from_the_browsers_json_has_pythons_words():
    # JSON.stringify writes 1.0 as 1: the words are those of the floats the rule compared.
    reason = {"code": "top1_below_bound", "value": 0, "bound": 1, "against": "server_run", "limit": "floor"}
    assert reasons.render(reason) == "top-1 agreement with the server 0.0000 < floor 1.0"
    floor = {
        "code": "outside_floor",
        "output": "logits",
        "index": [0, 0],
        "expected": 2,
        "got": 3.5,
        "max_abs": 1.5,
        "floor_abs": 1,
        "floor_rel": 0.001,
    }
    assert (
        reasons.render(floor)
        == "output 'logits' at [0, 0]: expected 2.0, got 3.5 (max abs 1.5; floor abs 1.0, rel 0.001)"
    )
