"""The variants and forms a build makes, as the CLI, the manifest and reports name them: `--variants` and `--forms`,
reading order, labels. The variants' rows (name, arithmetic, maker, rescue, calibration) are onnxport/variants.py;
the budgets they are judged by, one per arithmetic, are in accuracy/budgets.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, TypedDict

from onnxport.accuracy.budgets import BUDGETS
from onnxport.accuracy.tolerance import Tolerance
from onnxport.variants import VARIANTS, Variant

__all__ = [
    "AUTO",
    "FORMS",
    "FORM_ROWS",
    "NAMES",
    "VARIANTS",
    "Form",
    "Variant",
    "budget",
    "label",
    "label_key",
    "order",
    "parse_forms",
    "parse_variants",
    "variant",
]

NAMES: tuple[str, ...] = tuple(v.name for v in VARIANTS)
_BY_NAME = {v.name: v for v in VARIANTS}


def budget(name: str) -> Tolerance:
    """The budget of the arithmetic variant `name` is meant to have. A built file is judged by the
    budget of what it computes (`budget(arithmetic(model))`), which may differ."""
    return BUDGETS[variant(name).precision]


@dataclass(frozen=True)
class Form:
    """An optimized form a served variant may also come as. Its name is the manifest's key and the URLs' word,
    so it stays; `axis` says which kind of change to the variant's file it is."""

    name: str
    # file format: the same graph in another container; optimisation level: onnxruntime's graph optimizations
    # saved at one level; technique: a rewrite of the graph that only some models take.
    axis: Literal["file format", "optimisation level", "technique"]


# The optimized forms a served variant may also come as (convert/forms/, docs/reference/manifest.md "forms").
FORM_ROWS: tuple[Form, ...] = (
    Form("ort", "file format"),  # onnxruntime's ORT format, after the extended optimizations
    Form("basic", "optimisation level"),  # a .onnx after the basic level only
    Form("fused", "technique"),  # onnxruntime's transformer optimizer's fusions
    Form("gemm", "technique"),  # tree ensembles compiled into standard operators
)
FORMS: tuple[str, ...] = tuple(f.name for f in FORM_ROWS)
# `--forms auto`, the default: each of FORMS is made and kept only if it starts measurably sooner than
# its variant as built (convert/forms/gain.py); "all" and a list keep what they name whatever it gains.
AUTO: tuple[str, ...] = ("auto",)


def parse_variants(text: str) -> tuple[str, ...]:
    """`--variants`: "all" or a comma-separated list of NAMES, in NAMES' order. fp32 is always made: every other
    variant is measured against it, and the V2 API serves it by default."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if words in ([], ["all"]):
        return NAMES
    unknown = [w for w in words if w not in _BY_NAME]
    if unknown:
        raise ValueError(f"unknown variant {', '.join(map(repr, unknown))}; variants: {', '.join(NAMES)}, or all")
    return tuple(n for n in NAMES if n == "fp32" or n in words)


def parse_forms(text: str) -> tuple[str, ...]:
    """`--forms`: "auto", "all", "none", or a comma-separated list of FORMS, in FORMS' order."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if words == ["auto"]:
        return AUTO
    if words == ["all"]:
        return FORMS
    if words in ([], ["none"]):
        return ()
    unknown = [w for w in words if w not in FORMS]
    if unknown:
        raise ValueError(f"unknown form {', '.join(map(repr, unknown))}; forms: {', '.join(FORMS)}, or auto, all, none")
    return tuple(f for f in FORMS if f in words)


def variant(name: str) -> Variant:
    return _BY_NAME[name]


def label(name: str, arithmetic: str | None) -> str:
    """What people are shown for a variant: its name, unless its file computes another arithmetic
    than the name says. An already-quantized model imported as it is has one variant under the key
    `fp32` (the V2 API's version, its URLs, the browser's choice all use it), yet it is no fp32 model:
    it is shown as "original (int8)"; an fp16 conversion of it as "fp16 (int8)". arithmetic: the
    record's (convert/arithmetic.py), None for a variant with no file."""
    if arithmetic is None or name not in _BY_NAME or arithmetic == variant(name).precision:
        return name
    return f"original ({arithmetic})" if name == "fp32" else f"{name} ({arithmetic})"


class LabelKey(TypedDict, total=False):
    label: str  # what people are shown, where it is not the variant's name


def label_key(record: Mapping[str, Any] | None, name: str) -> LabelKey:
    """`{"label": ...}` for a report's row or entry keyed by `name`, from the manifest record's `label`, only when
    that is not the name: what the check's rows and bench.json carry, so the normal case reads as before (as does
    a record without a label: no file, or a repository built before labels)."""
    text = (record or {}).get("label")
    return {"label": str(text)} if text and text != name else {}


def order(name: str) -> int:
    """Reading position of a variant; unknown names sort last."""
    return NAMES.index(name) if name in _BY_NAME else len(NAMES)
