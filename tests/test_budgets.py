"""server/build/budgets.py: one table of budgets, and the check that quotes both figures."""

from __future__ import annotations

import pytest

from onnxport.accuracy import budgets
from onnxport.convert.pipeline import VARIANTS

# (task, metric key, budget attribute, a value inside, a value outside, how the reason prints it)
CASES = [
    ("classification", "top1_agreement", "top1_agreement_min", 0.995, 0.95, "0.9500"),
    ("embedding", "cosine_min", "cosine_min", 0.9995, 0.99, "0.99000"),
    ("regression", "scaled_max_abs", "scaled_max_abs", 0.005, 0.05, "0.05"),
    ("generic", "scaled_max_abs", "scaled_max_abs", 0.005, 0.05, "0.05"),
]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_has_a_budget_with_a_reason(variant):
    budget = budgets.BUDGETS[variant]
    assert budget.why.strip()
    assert 0 < budget.top1_agreement_min <= 1
    assert 0 < budget.cosine_min <= 1
    assert budget.scaled_max_abs > 0


def test_the_budget_table_names_no_unknown_variant():
    assert set(budgets.BUDGETS) == set(VARIANTS)


@pytest.mark.parametrize(("task", "key", "field", "inside", "outside", "printed"), CASES)
def test_check_accepts_a_metric_within_budget(task, key, field, inside, outside, printed):
    assert budgets.check("fp16", task, {key: inside}) is None


@pytest.mark.parametrize(("task", "key", "field", "inside", "outside", "printed"), CASES)
def test_check_accepts_a_metric_exactly_at_the_budget(task, key, field, inside, outside, printed):
    limit = getattr(budgets.BUDGETS["fp16"], field)
    assert budgets.check("fp16", task, {key: limit}) is None


@pytest.mark.parametrize(("task", "key", "field", "inside", "outside", "printed"), CASES)
def test_check_rejects_outside_with_both_figures(task, key, field, inside, outside, printed):
    reason = budgets.check("fp16", task, {key: outside})
    assert reason
    assert printed in reason
    assert str(getattr(budgets.BUDGETS["fp16"], field)) in reason


def test_budgets_loosen_from_fp32_to_int8():
    fp32, fp16, int8 = (budgets.BUDGETS[v] for v in ("fp32", "fp16", "int8-dynamic"))
    assert fp32.cosine_min > fp16.cosine_min > int8.cosine_min
    assert fp32.scaled_max_abs < fp16.scaled_max_abs < int8.scaled_max_abs


def test_same_figure_passes_int8_but_not_fp16():
    metric = {"top1_agreement": 0.98}
    assert budgets.check("int8-static", "classification", metric) is None
    assert budgets.check("fp16", "classification", metric)


def test_a_nan_scaled_error_is_rejected():
    assert budgets.check("fp16", "generic", {"scaled_max_abs": float("nan")})


@pytest.mark.parametrize(("task", "key"), [("classification", "top1_agreement"), ("embedding", "cosine_min")])
def test_a_nan_task_metric_is_rejected(task, key):
    assert budgets.check("fp16", task, {key: float("nan")})
