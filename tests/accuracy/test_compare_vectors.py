"""The comparison rule's shared vectors (tests/vectors/compare_vectors.json) through the Python rule.

tests/js/lib/verification/test_compare_vectors.mjs runs the same file through web/lib/verification/compare.js,
so the browser and the server judge every element alike. Each case's `reason` is the fp32 judgement's (the floor
basis, accuracy/judgement.py) as data: the code and numbers both languages must give.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from onnxport.accuracy.compare import output_errors
from onnxport.accuracy.judgement import judge
from onnxport.accuracy.tolerance import Tolerance

VECTORS = json.loads((Path(__file__).parent.parent / "vectors" / "compare_vectors.json").read_text())
NONFINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def decode(dtype: str, dims: list[int], values: list) -> np.ndarray:
    if dtype.startswith("float"):
        values = [NONFINITE[v] if isinstance(v, str) else v for v in values]
    elif dtype != "bool":
        values = [int(v) for v in values]  # int64 beyond 2**53 is written as a decimal string
    return np.array(values, dtype=dtype).reshape(dims)


def test_the_vector_file_has_enough_distinct_cases():
    names = [case["name"] for case in VECTORS]
    assert len(names) >= 20
    assert len(set(names)) == len(names)
    assert {case["pass"] for case in VECTORS} == {True, False}


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_vector(case):
    expected = decode(case["dtype"], case["dims"], case["expected"])
    got = decode(case["dtype"], case.get("got_dims", case["dims"]), case["got"])
    report = output_errors(expected, got, Tolerance(abs=case["abs"], rel=case["rel"]))
    passed = "first_mismatch" not in report and "shape_mismatch" not in report and report.get("nonfinite", 0) == 0
    assert passed == case["pass"], report
    assert report.get("first_mismatch", {}).get("index") == case["first_mismatch"], report
    assert ("shape_mismatch" in report) == ("got_dims" in case), report
    if "shape_mismatch" not in report:
        assert report["nonfinite"] == case.get("nonfinite", 0), report


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_the_floor_judgement_gives_the_cases_reason(case):
    expected = decode(case["dtype"], case["dims"], case["expected"])
    got = decode(case["dtype"], case.get("got_dims", case["dims"]), case["got"])
    floor = {"abs": case["abs"], "rel": case["rel"], "top1_min": 0, "cosine_min": -1}
    judged = judge("regression", None, "fp32", None, floor, {"out": got}, None, {"out": expected})
    assert judged["ok"] == case["pass"]
    assert judged["reason"] == case["reason"]
