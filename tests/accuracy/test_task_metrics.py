"""The detection-map and sequence tasks: their metrics (accuracy/compare.py) and budgets."""

from __future__ import annotations

import numpy as np

from onnxport.accuracy import budgets, compare
from onnxport.repository.variant_table import budget


def test_one_flipped_pixel_fails_the_max_but_not_the_mean_of_a_detection_map():
    heat = np.zeros((1, 1, 64, 64), np.float32)
    heat[0, 0, 10:20, 10:30] = 0.9
    flipped = heat.copy()
    flipped[0, 0, 40, 40] = 0.9  # one false pixel
    metric = compare.task_metric("detection-map", heat, flipped)
    assert metric["scaled_max_abs"] == 1.0
    assert metric["scaled_mean_abs"] == 1 / 4096
    assert budgets.check(budget("fp16"), "detection-map", metric) is None
    assert budgets.check(budget("fp16"), "generic", {"scaled_max_abs": metric["scaled_max_abs"]})


def test_a_detection_map_that_moved_everywhere_is_over_budget_with_both_figures():
    heat = np.linspace(0, 1, 100, dtype=np.float32).reshape(1, 100)
    reason = budgets.check(
        budget("int8-static"), "detection-map", compare.task_metric("detection-map", heat, heat + 0.05)
    )
    assert reason == "mean error / max |fp32| 0.05 > budget 0.01"


def test_sequence_agreement_counts_steps_whose_top_class_holds():
    steps = np.eye(5, dtype=np.float32)[None].repeat(2, 0)  # batch 2, 5 steps, 5 classes
    changed = steps.copy()
    changed[1, 3] = [1, 0, 0, 0, 0]  # one step of ten decodes another class
    metric = compare.task_metric("sequence", steps, changed)
    assert metric == {"step_agreement": 0.9}
    assert (
        budgets.check(budget("int8-dynamic"), "sequence", metric)
        == "per-step top-1 agreement with fp32 0.9000 < budget 0.97"
    )
    assert budgets.check(budget("int8-dynamic"), "sequence", {"step_agreement": 0.98}) is None
