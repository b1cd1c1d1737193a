"""accuracy/budgets.py and the budgets of repository/variant_table.py: one table, and the check that quotes
both figures."""

from __future__ import annotations

import pytest

from onnxport.accuracy import budgets
from onnxport.repository.variant_table import NAMES as VARIANTS
from onnxport.repository.variant_table import VARIANTS as TABLE
from onnxport.repository.variant_table import budget as variant_budget


def budget_of(name: str):
    return variant_budget(name)


# (task, metric key, budget attribute, a value inside, a value outside, how the reason prints it)
CASES = [
    ("classification", "top1_agreement", "top1_min", 0.995, 0.95, "0.9500"),
    ("embedding", "cosine_min", "cosine_min", 0.9995, 0.99, "0.99000"),
    ("regression", "scaled_max_abs", "scaled_max_abs", 0.005, 0.05, "0.05"),
    ("generic", "scaled_max_abs", "scaled_max_abs", 0.005, 0.05, "0.05"),
]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_has_a_budget_with_a_reason(variant):
    budget = budget_of(variant)
    assert budget.why.strip()
    assert 0 < budget.top1_min <= 1
    assert 0 < budget.cosine_min <= 1
    assert budget.scaled_max_abs > 0


def test_the_variant_table_has_one_row_per_name_in_reading_order():
    # These six in this order, whatever rows are added among them (docs/development.md "Adding one").
    names = [v.name for v in TABLE]
    first = ["fp32", "fp16", "int8-dynamic", "int8-static", "int8-weights", "int4"]
    assert [n for n in names if n in first] == first and len(set(names)) == len(names)
    assert {v.precision for v in TABLE} == {"fp32", "fp16", "int8"}


@pytest.mark.parametrize(("task", "key", "field", "inside", "outside", "printed"), CASES)
def test_check_accepts_a_metric_within_budget(task, key, field, inside, outside, printed):
    assert budgets.check(budget_of("fp16"), task, {key: inside}) is None


@pytest.mark.parametrize(("task", "key", "field", "inside", "outside", "printed"), CASES)
def test_check_accepts_a_metric_exactly_at_the_budget(task, key, field, inside, outside, printed):
    limit = getattr(budget_of("fp16"), field)
    assert budgets.check(budget_of("fp16"), task, {key: limit}) is None


@pytest.mark.parametrize(("task", "key", "field", "inside", "outside", "printed"), CASES)
def test_check_rejects_outside_with_both_figures(task, key, field, inside, outside, printed):
    reason = budgets.check(budget_of("fp16"), task, {key: outside})
    assert reason
    assert printed in reason
    assert str(getattr(budget_of("fp16"), field)) in reason


def test_budgets_loosen_from_fp32_to_int8():
    fp32, fp16, int8 = (budget_of(v) for v in ("fp32", "fp16", "int8-dynamic"))
    assert fp32.cosine_min > fp16.cosine_min > int8.cosine_min
    assert fp32.scaled_max_abs < fp16.scaled_max_abs < int8.scaled_max_abs


def test_same_figure_passes_int8_but_not_fp16():
    metric = {"top1_agreement": 0.98}
    assert budgets.check(budget_of("int8-static"), "classification", metric) is None
    assert budgets.check(budget_of("fp16"), "classification", metric)


def test_a_nan_scaled_error_is_rejected():
    assert budgets.check(budget_of("fp16"), "generic", {"scaled_max_abs": float("nan")})


@pytest.mark.parametrize(("task", "key"), [("classification", "top1_agreement"), ("embedding", "cosine_min")])
def test_a_nan_task_metric_is_rejected(task, key):
    assert budgets.check(budget_of("fp16"), task, {key: float("nan")})
