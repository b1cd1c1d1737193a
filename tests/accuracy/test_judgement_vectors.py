"""The judgement's shared vectors (tests/vectors/judgement_vectors.json) through the Python rule.

tests/js/lib/verification/test_judgement_vectors.mjs runs the same file through web/lib/verification/judgement.js:
the import, the check, first-use verification and the playground judge a result alike, and give the same reason as
data (a code and its numbers); each language renders its own words (Python's are `reason_text`).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from onnxport.accuracy.judgement import judge
from onnxport.accuracy.reasons import CODES, render
from onnxport.accuracy.tolerance import Tolerance

DATA = Path(__file__).parent.parent / "vectors"
VECTORS = json.loads((DATA / "judgement_vectors.json").read_text())


def _generator():
    spec = importlib.util.spec_from_file_location("make_judgement_vectors", DATA / "make_judgement_vectors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_vector_file_covers_both_outcomes_both_bases_and_the_issues_cases():
    names = [v["name"] for v in VECTORS]
    assert len(names) >= 20 and len(set(names)) == len(names)
    assert {(v["ok"], v["basis"]) for v in VECTORS} == {
        (True, "floor"),
        (False, "floor"),
        (True, "budget"),
        (False, "budget"),
    }
    assert {v["task"] for v in VECTORS} >= {"classification", "embedding", "sequence", "detection-map", "regression"}
    off = next(v for v in VECTORS if v["name"].startswith("int8 off by 0.5"))
    assert off["ok"] and off["diagnostic_max_abs"] == pytest.approx(0.5, abs=1e-6)
    assert next(v for v in VECTORS if "0.99978" in v["name"])["ok"]
    assert not next(v for v in VECTORS if v["name"].startswith("fp32 float file off by 1e-3"))["ok"]
    named_fp32 = next(v for v in VECTORS if v["name"].startswith("already-int8 file named fp32"))
    assert named_fp32["ok"] and named_fp32["basis"] == "budget"


def test_the_vector_file_is_what_the_generator_writes():
    # The expectations (ok, basis, reason prefix) live in the generator; a hand edit of the JSON or a
    # change of the rule that breaks one shows here.
    assert _generator().build() == VECTORS


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector(vector):
    result = _generator().run(vector)
    assert (result["ok"], result["basis"]) == (vector["ok"], vector["basis"]), result
    assert result["reason"] == vector["reason"]
    assert (result["reason"] is None) == vector["ok"]
    text = render(result["reason"]) if result["reason"] else None
    assert text == vector["reason_text"]
    if vector["reason_prefix"]:
        assert text.startswith(vector["reason_prefix"])
        assert result["reason"]["code"] in CODES
    assert result["metric"] == pytest.approx(vector["metric"], rel=1e-12)
    if vector["diagnostic_max_abs"] is None:
        assert result["diagnostic"] is None
    else:
        assert result["diagnostic"]["max_abs"] == pytest.approx(vector["diagnostic_max_abs"], rel=1e-12)
        assert {k: v for k, v in result["diagnostic"].items() if k != "text"} == vector["diagnostic"]
        assert result["diagnostic"]["text"].startswith("element-wise vs the server's output of this file: max abs ")


def test_the_diagnostic_names_where_and_what_element_wise_closeness_would_have_needed():
    y = np.array([[2.0, 1.0, 0.0]], np.float32)
    result = judge(
        "classification",
        "y",
        "int8",
        Tolerance(top1_min=0.97),
        {"abs": 1e-4, "rel": 1e-6},
        {"y": y + np.float32(0.25)},
        {"y": y},
        {"y": y - np.float32(0.25)},
    )
    assert result["ok"] and result["basis"] == "budget" and result["reason"] is None
    diagnostic = result["diagnostic"]
    assert diagnostic["output"] == "y" and diagnostic["max_abs"] == pytest.approx(0.5)
    assert diagnostic["first_outside_floor"] == {"output": "y", "index": [0, 0], "expected": 1.75, "got": 2.25}
    assert diagnostic["needed_abs"] == pytest.approx(0.5)
    assert diagnostic["text"] == (
        "element-wise vs the server's output of this file: max abs 0.5 in 'y', first outside "
        "the floor at y[0, 0]; the element rule would have needed abs 0.5"
    )
    assert result["outputs"]["y"]["first_mismatch"]["index"] == [0, 0]


def test_a_diagnostic_of_equal_outputs_says_they_match_and_names_no_bound_of_0():
    y = np.array([[2.0, 1.0, 0.0]], np.float32)
    result = judge(
        "classification",
        "y",
        "int8",
        Tolerance(top1_min=0.97),
        {"abs": 1e-4, "rel": 1e-6},
        {"y": y},
        {"y": y + np.float32(0.25)},
        {"y": y},
    )
    assert result["diagnostic"]["max_abs"] == 0.0
    assert result["diagnostic"]["text"] == (
        "element-wise vs the server's output of this file: max abs 0 in 'y': the outputs match exactly"
    )


def test_judge_asks_for_what_its_basis_needs():
    y = {"y": np.zeros((1, 2), np.float32)}
    with pytest.raises(ValueError, match="arithmetic must be one of fp32, fp16, int8, got 'int4'"):
        judge("classification", "y", "int4", None, None, y, y, y)
    with pytest.raises(ValueError, match="same_variant is needed"):
        judge("classification", "y", "fp32", None, {"abs": 1e-4}, y, y, None)
    with pytest.raises(ValueError, match="fp32 is needed"):
        judge("classification", "y", "fp16", {"top1_min": 0.99}, None, y, None, y)
    with pytest.raises(ValueError, match="budget is needed"):
        judge("classification", "y", "int8", None, None, y, y, y)
