"""Accuracy budgets: how far each variant may drift from fp32 and still be served.

This is the one table of them. A variant outside its budget stays in the
report, marked rejected with the figure that broke it, and is not served.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    top1_agreement_min: float  # classifiers: share of inputs whose top class matches fp32
    cosine_min: float  # embeddings: worst cosine similarity to fp32 over the golden inputs
    scaled_max_abs: float  # other tasks: max |error| / max |fp32 value|
    why: str


BUDGETS: dict[str, Budget] = {
    "fp32": Budget(
        1.0, 0.99999, 1e-5,
        "Same precision as the export: only kernel rounding may differ (the export itself is "
        "checked against the source framework with the recipe's tolerance).",
    ),
    "fp16": Budget(
        0.99, 0.999, 1e-2,
        "fp16 keeps 11 significant bits (~3 decimal digits): per-value error near 1e-3 of "
        "the value's scale; a flipped top class is allowed only between near-tied scores.",
    ),
    "int8-dynamic": Budget(
        0.97, 0.98, 0.1,
        "8-bit weights with per-batch activation ranges: the usual accuracy cost is under a "
        "few percent; beyond that the variant is not worth its speed or size.",
    ),
    "int8-static": Budget(
        0.97, 0.98, 0.1,
        "8-bit weights and activations with ranges fixed by calibration: same budget as "
        "dynamic int8; calibration that misses the real value range shows up here.",
    ),
}


def check(variant: str, task: str, metric: dict[str, float]) -> str | None:
    """None when the metric is within budget, else the reason, with both figures."""
    budget = BUDGETS[variant]
    if task == "classification" and "top1_agreement" in metric:
        if not metric["top1_agreement"] >= budget.top1_agreement_min:  # NaN fails too
            return f"top-1 agreement with fp32 {metric['top1_agreement']:.4f} < budget {budget.top1_agreement_min}"
    elif task == "embedding" and "cosine_min" in metric:
        if not metric["cosine_min"] >= budget.cosine_min:
            return f"min cosine similarity to fp32 {metric['cosine_min']:.5f} < budget {budget.cosine_min}"
    elif "scaled_max_abs" in metric:
        if not metric["scaled_max_abs"] <= budget.scaled_max_abs:
            return f"max error / max |fp32| {metric['scaled_max_abs']:.3g} > budget {budget.scaled_max_abs}"
    return None
