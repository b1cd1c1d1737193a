"""server/onnxport/accuracy/compare.py: error figures, first mismatch, task metrics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from onnxport.accuracy import compare
from onnxport.accuracy.tolerance import Tolerance

TIGHT = Tolerance(abs=1e-6)


def f32(*values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def test_identical_outputs_have_zero_error_and_are_within():
    report = compare.output_errors(f32(1, 2, 3), f32(1, 2, 3), TIGHT)
    assert report["max_abs"] == report["mean_abs"] == report["max_rel"] == 0.0
    assert report["nonfinite"] == 0
    assert "first_mismatch" not in report
    assert compare.within({"y": report})


def test_max_mean_and_relative_error():
    report = compare.output_errors(f32(1, 2, 3, 4), f32(1, 2.5, 3, 3))
    assert report["max_abs"] == pytest.approx(1.0)
    assert report["mean_abs"] == pytest.approx(1.5 / 4)
    assert report["max_rel"] == pytest.approx(0.25)  # 0.5/2 and 1/4
    assert report["scale"] == pytest.approx(4.0)


def test_without_tolerance_float_outputs_name_no_mismatch():
    assert "first_mismatch" not in compare.output_errors(f32(1, 2), f32(1, 9))


def test_first_mismatch_names_index_expected_and_got():
    expected = np.array([[1, 2], [3, 4]], dtype=np.float32)
    got = np.array([[1, 2], [3.5, 5]], dtype=np.float32)
    report = compare.output_errors(expected, got, Tolerance(abs=0.1))
    assert report["first_mismatch"] == {"index": [1, 0], "expected": 3.0, "got": 3.5}
    assert not compare.within({"y": report})


def test_relative_tolerance_scales_with_the_reference():
    expected, got = f32(1000, 1), f32(1000.5, 1)
    assert "first_mismatch" not in compare.output_errors(expected, got, Tolerance(abs=0, rel=1e-3))
    assert "first_mismatch" in compare.output_errors(expected, got, Tolerance(abs=0, rel=1e-4))


def test_integer_outputs_must_match_exactly():
    expected, got = np.array([0, 1, 2], np.int64), np.array([0, 2, 2], np.int64)
    # Even a tolerance that would forgive 1.0 does not apply to labels.
    report = compare.output_errors(expected, got, Tolerance(abs=10))
    assert report["mismatches"] == 1
    assert report["first_mismatch"] == {"index": [1], "expected": 1, "got": 2}
    assert not compare.within({"label": report})


def test_equal_integer_outputs_are_within():
    labels = np.array([0, 1, 2], np.int64)
    report = compare.output_errors(labels, labels.copy())
    assert report["mismatches"] == 0
    assert compare.within({"label": report})


def test_nan_equals_nan():
    report = compare.output_errors(f32(1, np.nan), f32(1, np.nan), TIGHT)
    assert report["max_abs"] == 0.0
    assert report["nonfinite"] == 0
    assert "first_mismatch" not in report
    assert compare.within({"y": report})


def test_nan_equals_nan_report_is_strict_json():
    report = compare.output_errors(f32(1, np.nan), f32(1, np.nan), TIGHT)
    json.dumps(report, allow_nan=False)


def test_nan_where_reference_is_finite_is_nonfinite():
    report = compare.output_errors(f32(1, 2), f32(1, np.nan), TIGHT)
    assert report["nonfinite"] == 1
    assert not compare.within({"y": report})


def test_inf_where_reference_is_finite_counts_as_nonfinite():
    report = compare.output_errors(f32(1, 2, 3), f32(1, np.inf, -np.inf))
    assert report["nonfinite"] == 2
    # Without a tolerance nothing is a "mismatch", yet the output is not within.
    assert not compare.within({"y": report})
    # The finite figures stay finite: the report is strict JSON.
    json.dumps(report, allow_nan=False)


def test_nonfinite_values_are_named_as_strings_in_the_first_mismatch():
    report = compare.output_errors(f32(1, 2), f32(1, np.inf), TIGHT)
    assert report["first_mismatch"] == {"index": [1], "expected": 2.0, "got": "inf"}
    json.dumps(report, allow_nan=False)


def test_matching_infinities_are_equal():
    report = compare.output_errors(f32(1, np.inf), f32(1, np.inf), TIGHT)
    assert report["nonfinite"] == 0
    assert "first_mismatch" not in report


def test_shape_mismatch_is_reported_and_not_within():
    report = compare.output_errors(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32), TIGHT)
    assert report == {"shape_mismatch": {"expected": [2, 3], "got": [3, 2]}}
    assert not compare.within({"y": report})


def test_compare_covers_outputs_present_on_both_sides():
    errors = compare.compare({"a": f32(1), "b": f32(2)}, {"a": f32(1), "c": f32(3)}, TIGHT)
    assert list(errors) == ["a"]


def test_top1_agreement_is_the_share_of_matching_argmax():
    expected = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]], np.float32)
    got = expected.copy()
    got[2] = [0.4, 0.6]  # one flipped class out of four
    assert compare.task_metric("classification", expected, got) == {"top1_agreement": 0.75}


def test_cosine_metric_is_scale_invariant_and_takes_the_worst_row():
    rng = np.random.default_rng(0)
    expected = rng.normal(size=(4, 8)).astype(np.float32)
    assert compare.task_metric("embedding", expected, expected * 3)["cosine_min"] == pytest.approx(1.0)
    got = expected.copy()
    got[1] = -got[1]
    metric = compare.task_metric("embedding", expected, got)
    assert metric["cosine_min"] == pytest.approx(-1.0)
    assert metric["cosine_mean"] == pytest.approx(0.5)


def test_cosine_of_a_zero_vector_is_zero_not_nan():
    expected = np.ones((1, 4), np.float32)
    assert compare.task_metric("embedding", expected, np.zeros((1, 4), np.float32))["cosine_min"] == 0.0


def test_other_tasks_get_the_scaled_max_error():
    metric = compare.task_metric("regression", f32(10, -20), f32(10, -19))
    assert metric == {"scaled_max_abs": pytest.approx(1 / 20)}
    assert compare.scaled_max_abs(f32(1, 2), f32(1, np.inf)) == float("inf")


def test_task_metric_of_mismatched_shapes_is_empty():
    assert compare.task_metric("classification", np.zeros((2, 3)), np.zeros((3, 3))) == {}


def test_accuracy_against_labels():
    scores = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], np.float32)
    assert compare.accuracy(np.array([0, 1, 1]), scores) == pytest.approx(2 / 3)
