"""The variants a build makes: the one table of their names, precisions and reading order, and the
budgets, one per arithmetic a file can compute in."""

from __future__ import annotations

from dataclasses import dataclass, replace

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
        top1_min=1.0, cosine_min=0.99999, scaled_max_abs=1e-5, scaled_mean_abs=1e-6,
        why="Same precision as the export: only kernel rounding may differ (the export itself is "
            "checked against the source framework with the recipe's tolerance)."),
    "fp16": Tolerance(
        top1_min=0.99, cosine_min=0.999, scaled_max_abs=1e-2, scaled_mean_abs=1e-3,
        why="fp16 keeps 11 significant bits (~3 decimal digits): per-value error near 1e-3 of "
            "the value's scale; a flipped top class is allowed only between near-tied scores."),
    "int8": Tolerance(
        top1_min=0.97, cosine_min=0.98, scaled_max_abs=0.1, scaled_mean_abs=1e-2,
        why="8-bit weights (and, static or pre-quantized, activations): the usual accuracy cost is "
            "under a few percent; beyond that the variant is not worth its speed or size. Calibration "
            "that misses the real value range shows up here."),
}


def budget(arithmetic: str) -> Tolerance:
    """The budget of a file that computes in `arithmetic` (convert/arithmetic.py)."""
    return BUDGETS[arithmetic]


# The import serves an fp16 or int8 variant only with this share of its budget left unused. The budget
# is what every runtime's result is judged by (the check, first-use verification), and their fp16 and
# int8 kernels round differently from native onnxruntime's: on the corpus, WebAssembly's int8 moved a
# detector's mean error from 0.0097 (native, just within 0.01) to 0.0103, 6% of the budget.
SERVING_HEADROOM = 0.1
SERVING_BOUND = f"the serving bound ({100 - round(SERVING_HEADROOM * 100)}% of the budget)"


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

    return replace(full, top1_min=agreement(full.top1_min), cosine_min=agreement(full.cosine_min),
                   scaled_max_abs=error(full.scaled_max_abs), scaled_mean_abs=error(full.scaled_mean_abs))


@dataclass(frozen=True)
class Variant:
    name: str
    precision: str  # fp32 | fp16 | int8: the arithmetic the build means to make

    @property
    def budget(self) -> Tolerance:
        """The budget of the arithmetic this variant is meant to have. A built file is judged by the
        budget of what it computes (`budget(arithmetic(model))`), which may differ."""
        return BUDGETS[self.precision]


# In the order people read them (the manifest's JSON is key-sorted).
VARIANTS: tuple[Variant, ...] = (
    Variant("fp32", "fp32"),
    Variant("fp16", "fp16"),
    Variant("int8-dynamic", "int8"),
    Variant("int8-static", "int8"),
)
NAMES: tuple[str, ...] = tuple(v.name for v in VARIANTS)
_BY_NAME = {v.name: v for v in VARIANTS}


# The optimized forms a served variant may also come as (convert/forms.py, docs/manifest.md "forms").
FORMS: tuple[str, ...] = ("ort", "basic", "fused")


def parse_forms(text: str) -> tuple[str, ...]:
    """`--forms`: "all", "none", or a comma-separated list of FORMS, in FORMS' order."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if words == ["all"]:
        return FORMS
    if words in ([], ["none"]):
        return ()
    unknown = [w for w in words if w not in FORMS]
    if unknown:
        raise ValueError(f"unknown form {', '.join(map(repr, unknown))}; forms: {', '.join(FORMS)}, or all, or none")
    return tuple(f for f in FORMS if f in words)


def variant(name: str) -> Variant:
    return _BY_NAME[name]


def order(name: str) -> int:
    """Reading position of a variant; unknown names sort last."""
    return NAMES.index(name) if name in _BY_NAME else len(NAMES)
