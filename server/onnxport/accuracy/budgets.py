"""Judge a variant's task metric against its budget (the budgets are in repository/variants.py).

A variant outside its budget stays in the report, marked rejected with the figure that broke it,
and is not served.
"""

from __future__ import annotations

from onnxport.accuracy.tolerance import Tolerance


def check(budget: Tolerance, task: str, metric: dict[str, float]) -> str | None:
    """None when the metric is within budget, else the reason, with both figures."""
    if task == "classification" and "top1_agreement" in metric and budget.top1_min is not None:
        if not metric["top1_agreement"] >= budget.top1_min:  # NaN fails too
            return f"top-1 agreement with fp32 {metric['top1_agreement']:.4f} < budget {budget.top1_min}"
    elif task == "embedding" and "cosine_min" in metric and budget.cosine_min is not None:
        if not metric["cosine_min"] >= budget.cosine_min:
            return f"min cosine similarity to fp32 {metric['cosine_min']:.5f} < budget {budget.cosine_min}"
    elif task == "sequence" and "step_agreement" in metric and budget.top1_min is not None:
        if not metric["step_agreement"] >= budget.top1_min:
            return f"per-step top-1 agreement with fp32 {metric['step_agreement']:.4f} < budget {budget.top1_min}"
    elif task == "detection-map" and "scaled_mean_abs" in metric and budget.scaled_mean_abs is not None:
        if not metric["scaled_mean_abs"] <= budget.scaled_mean_abs:
            return f"mean error / max |fp32| {metric['scaled_mean_abs']:.3g} > budget {budget.scaled_mean_abs}"
    elif "scaled_max_abs" in metric and budget.scaled_max_abs is not None:
        if not metric["scaled_max_abs"] <= budget.scaled_max_abs:
            return f"max error / max |fp32| {metric['scaled_max_abs']:.3g} > budget {budget.scaled_max_abs}"
    return None
