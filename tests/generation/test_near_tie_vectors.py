"""generation/near_tie.py: the near-tie rule, written once, and the vector file the browser library reads it from."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures import vectors
from onnxport.generation.near_tie import MARGIN, is_near_tie

VECTORS = vectors.read("near_tie_vectors")


def test_the_vector_file_is_what_the_python_side_writes_now():
    assert VECTORS == vectors.rebuilt("near_tie_vectors"), "run tests/vectors/make_near_tie_vectors.py"
    assert VECTORS["margin"] == MARGIN


def test_the_vectors_hold_both_answers_and_the_float32_edges():
    answers = {c["label"]: c["near_tie"] for c in VECTORS["cases"]}
    assert set(answers.values()) == {True, False}
    assert answers["1.1 and 1.0 in float32: 0.10000002 apart"] is False
    assert answers["0.5 and 0.4 in float32: 0.09999999 apart"] is True


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["label"])
def test_each_case_as_float32_logits(case):
    logits = np.asarray(case["logits"], dtype=np.float32)
    assert is_near_tie(logits) is case["near_tie"]
    # The doubles of the file are the float32 values exactly: the same answer read either way.
    assert is_near_tie(np.asarray(case["logits"], dtype=np.float64)) is case["near_tie"]


def test_the_order_of_the_logits_does_not_matter():
    rng = np.random.default_rng(0)
    for case in VECTORS["cases"]:
        shuffled = rng.permutation(np.asarray(case["logits"], dtype=np.float32))
        assert is_near_tie(shuffled) is case["near_tie"], case["label"]


def test_nan_and_infinite_best_are_no_near_tie():
    assert is_near_tie(np.array([1.0, np.nan, 1.0], dtype=np.float32)) is False
    assert is_near_tie(np.array([np.inf, np.inf, 0.0], dtype=np.float32)) is False
    assert is_near_tie(np.array([np.inf, 3.0], dtype=np.float32)) is False
    assert is_near_tie(np.array([-np.inf, 3.0, 2.95], dtype=np.float32)) is True
