"""Judge a variant's task metric against its budget (the budgets are in repository/variants.py).

A variant outside its budget stays in the report, marked rejected with the figure that broke it,
and is not served.
"""

from __future__ import annotations

from onnxport.accuracy.tolerance import Tolerance


def check(budget: Tolerance, task: str, metric: dict[str, float], *, against: str = "fp32",
          bound: str = "budget") -> str | None:
    """None when the metric is within budget, else the reason, with both figures.

    `against` names the reference the metric was measured on and `bound` what the limit is, for the
    reason's words: the browser's fp32 judgement (accuracy/judgement.py) measures against the
    server's output and calls its limits the floor. web/lib/compare.js budgetCheck is this rule."""
    if task == "classification" and "top1_agreement" in metric and budget.top1_min is not None:
        if not metric["top1_agreement"] >= budget.top1_min:  # NaN fails too
            return f"top-1 agreement with {against} {metric['top1_agreement']:.4f} < {bound} {budget.top1_min}"
    elif task == "embedding" and "cosine_min" in metric and budget.cosine_min is not None:
        if not metric["cosine_min"] >= budget.cosine_min:
            return f"min cosine similarity to {against} {metric['cosine_min']:.5f} < {bound} {budget.cosine_min}"
    elif task == "sequence" and "step_agreement" in metric and budget.top1_min is not None:
        if not metric["step_agreement"] >= budget.top1_min:
            return f"per-step top-1 agreement with {against} {metric['step_agreement']:.4f} < {bound} {budget.top1_min}"
    elif task == "detection-map" and "scaled_mean_abs" in metric and budget.scaled_mean_abs is not None:
        if not metric["scaled_mean_abs"] <= budget.scaled_mean_abs:
            return f"mean error / max |{against}| {metric['scaled_mean_abs']:.3g} > {bound} {budget.scaled_mean_abs}"
    elif "scaled_max_abs" in metric and budget.scaled_max_abs is not None:
        if not metric["scaled_max_abs"] <= budget.scaled_max_abs:
            return f"max error / max |{against}| {metric['scaled_max_abs']:.3g} > {bound} {budget.scaled_max_abs}"
    return None
