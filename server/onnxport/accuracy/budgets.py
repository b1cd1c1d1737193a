"""The budgets, one per arithmetic a file can compute in, and the judgement of a task metric against one.

A variant outside its budget stays in the report, marked rejected with the figure that broke it,
and is not served.
"""

from __future__ import annotations

from dataclasses import replace

from onnxport.accuracy import reasons
from onnxport.accuracy.measured import GenerationBudget, GenerationMeasurement
from onnxport.accuracy.tolerance import Tolerance

# What a file computes (convert/arithmetic.py): fp32, fp16 (some values held as 16-bit floats) or int8
# (some operator quantized). Each has one budget, below; a variant is judged by the budget of its file's
# arithmetic, not by its name, so the same graph gets the same verdict under any variant name (an
# already-int8 model's "fp32" variant is judged as int8).
ARITHMETICS: tuple[str, ...] = ("fp32", "fp16", "int8")

# How far a file may drift from fp32 and still be served, judged on the task metric. Which bound
# applies depends on the task: top1_min for classifiers and (per step) sequences, cosine_min for
# embeddings, scaled_mean_abs for detection maps (thresholded downstream: a mean error of 1e-3 of the
# map's range moves a few border pixels; 1e-2 for int8, a quantization step of an 8-bit map),
# scaled_max_abs else.
BUDGETS: dict[str, Tolerance] = {
    "fp32": Tolerance(
        top1_min=1.0,
        cosine_min=0.99999,
        scaled_max_abs=1e-5,
        scaled_mean_abs=1e-6,
        why="Same precision as the export: only kernel rounding may differ (the export itself is "
        "checked against the source framework with the recipe's tolerance).",
    ),
    "fp16": Tolerance(
        top1_min=0.99,
        cosine_min=0.999,
        scaled_max_abs=1e-2,
        scaled_mean_abs=1e-3,
        why="fp16 keeps 11 significant bits (~3 decimal digits): per-value error near 1e-3 of "
        "the value's scale; a flipped top class is allowed only between near-tied scores.",
    ),
    "int8": Tolerance(
        top1_min=0.97,
        cosine_min=0.98,
        scaled_max_abs=0.1,
        scaled_mean_abs=1e-2,
        why="8-bit weights (and, static or pre-quantized, activations): the usual accuracy cost is "
        "under a few percent; beyond that the variant is not worth its speed or size. Calibration "
        "that misses the real value range shows up here.",
    ),
}


def budget(arithmetic: str) -> Tolerance:
    """The budget of a file that computes in `arithmetic` (convert/arithmetic.py)."""
    return BUDGETS[arithmetic]


# The import serves an fp16 or int8 variant only with this share of its budget left unused. The budget
# is what every runtime's result is judged by (the check, first-use verification), and their fp16 and
# int8 kernels round differently from native onnxruntime's: on the corpus, WebAssembly's int8 moved a
# detector's mean error from 0.0097 (native, just within 0.01) to 0.0103, 6% of the budget.
SERVING_HEADROOM = 0.1
SERVING_BOUND: reasons.Limit = "serving_bound"  # the limit's name in a reason ("the serving bound (90% of the budget)")


def serving_budget(arithmetic: str) -> Tolerance:
    """The budget the import serves a variant within: `budget(arithmetic)` less SERVING_HEADROOM of each
    bound (of the error, or of the shortfall of an agreement from 1). fp32's is its budget."""
    full = BUDGETS[arithmetic]
    if arithmetic == "fp32":
        return full
    keep = 1 - SERVING_HEADROOM

    def agreement(bound: float | None) -> float | None:
        return None if bound is None else round(1 - keep * (1 - bound), 9)

    def error(bound: float | None) -> float | None:
        return None if bound is None else round(keep * bound, 12)

    return replace(
        full,
        top1_min=agreement(full.top1_min),
        cosine_min=agreement(full.cosine_min),
        scaled_max_abs=error(full.scaled_max_abs),
        scaled_mean_abs=error(full.scaled_mean_abs),
    )


def check(
    budget: Tolerance,
    task: str,
    metric: dict[str, float],
    *,
    against: reasons.Against = "fp32",
    bound: reasons.Limit = "budget",
) -> str | None:
    """None when the metric is within budget, else the reason in words, with both figures (reasons.render of
    shortfall())."""
    reason = shortfall(budget, task, metric, against=against, limit=bound)
    return None if reason is None else reasons.render(reason)


_METRICS: tuple[tuple[str | None, str, str, str, str], ...] = (
    # (task, or None for any other; metric key; budget field; "min" or "max"; reason code)
    ("classification", "top1_agreement", "top1_min", "min", "top1_below_bound"),
    ("embedding", "cosine_min", "cosine_min", "min", "cosine_below_bound"),
    ("sequence", "step_agreement", "top1_min", "min", "step_agreement_below_bound"),
    ("detection-map", "scaled_mean_abs", "scaled_mean_abs", "max", "mean_error_above_bound"),
    (None, "scaled_max_abs", "scaled_max_abs", "max", "max_error_above_bound"),
)


def shortfall(
    budget: Tolerance,
    task: str,
    metric: dict[str, float],
    *,
    against: reasons.Against = "fp32",
    limit: reasons.Limit = "budget",
) -> reasons.BoundReason | None:
    """None when the metric is within budget, else the reason as data (accuracy/reasons.py).

    `against` names the reference the metric was measured on ("fp32" or "server_run") and `limit` what the bound
    is ("budget", "floor", or SERVING_BOUND): the browser's fp32 judgement (accuracy/judgement.py) measures
    against the server's output and calls its limits the floor. web/lib/verification/compare.js budgetCheck is
    this rule."""
    for rule_task, key, field, kind, code in _METRICS:  # the first rule that applies decides
        bound = getattr(budget, field)
        if rule_task is not None and task != rule_task:
            continue
        if key not in metric or bound is None:
            continue  # as an elif chain: the next rule may apply
        value = metric[key]
        if value >= bound if kind == "min" else value <= bound:  # NaN fails either way
            return None
        reason: reasons.BoundReason = {
            "code": code,  # type: ignore[typeddict-item]  # one of BoundReason's codes, by _METRICS
            "value": reasons.number(value),
            "bound": bound,
            "against": against,
            "limit": limit,
        }
        if limit == SERVING_BOUND:
            reason["share"] = round(1 - SERVING_HEADROOM, 9)
        return reason
    return None


# A decoder's variants (a `generation` model: convert/decoder_build.py) are judged by what they generate against the
# fp32 decoder, whatever their arithmetic: the next-token argmax on a held-out text must agree with fp32's on
# top1_min of its tokens, and the text's likelihood may drop by at most nll_change_max nats a token. Greedy
# continuations are reported, not judged: one early flip changes all that follows, so an equal share is coarse on
# a few prompts. On SmolLM2-135M (8 prompts, 256 held-out tokens) int8 weights agree on .91-.93 at +0.01 to +0.08
# nats; 4-bit blocks of 32 on .51-.67, which no use of a model that small survives.
GENERATION = GenerationBudget(
    top1_min=0.9,
    nll_change_max=0.1,
    why="Weight-only variants of a decoder: most next tokens as fp32's, and the text about as likely (0.1 nats a "
    "token is a perplexity 1.105x fp32's); greedy continuations are reported, not judged.",
)


def generation_shortfall(metrics: GenerationMeasurement, budget: GenerationBudget = GENERATION) -> str | None:
    """None when a decoder variant's metrics are within the generation budget, else the reason in words, with
    both figures. NaN fails."""
    top1 = metrics["top1_agreement"]
    if not top1 >= budget["top1_min"]:
        return reasons.render(
            {
                "code": "top1_below_bound",
                "value": reasons.number(top1),
                "bound": budget["top1_min"],
                "against": "fp32",
                "limit": "budget",
            }
        )
    change = metrics["nll_change"]
    if not change <= budget["nll_change_max"]:
        return f"NLL change against fp32 {change:+.4f} nats/token > budget {budget['nll_change_max']}"
    return None
