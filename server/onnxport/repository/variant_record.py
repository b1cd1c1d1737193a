"""A variant's record in manifest.json and its outcome: served, over budget, failed or skipped.

Every variant of the table is written for every model, whatever became of it. The manifest writes `status`
"ok", "rejected" or "skipped"; `outcome()` tells the two kinds of "rejected" apart (a file or none), so readers
ask it rather than the keys. Variant names, precisions and arithmetics come from their tables
(repository/variant_table.py, accuracy/budgets.py, accuracy/browser_runtimes.py).
"""

from typing import TYPE_CHECKING, Literal, TypeAlias, TypeGuard, Union, cast

from pydantic import with_config
from typing_extensions import NotRequired, TypedDict

from onnxport.accuracy import browser_runtimes, budgets, reasons
from onnxport.accuracy.measured import Budget, Measurement
from onnxport.json_boundary import JsonObject
from onnxport.json_fields import STRICT, ArtifactPath, Count, Sha256
from onnxport.repository import variant_table

# Enumerations read from their tables at run time: pydantic (and so the schema) sees their values;
# mypy cannot read a Literal built at run time, and takes them as plain aliases (the ignores).
VariantName: TypeAlias = Literal[variant_table.NAMES]  # type: ignore[valid-type]
Precision: TypeAlias = Literal[tuple(dict.fromkeys(v.precision for v in variant_table.VARIANTS))]  # type: ignore[valid-type]
Arithmetic: TypeAlias = Literal[budgets.ARITHMETICS]  # type: ignore[valid-type]  # what a variant's file computes
BrowserRuntime: TypeAlias = Literal[browser_runtimes.NAMES]  # type: ignore[valid-type]
Status = Literal["ok", "rejected", "skipped"]  # as manifest.json writes it
Outcome = Literal["served", "over_budget", "failed", "skipped"]  # what became of it (outcome())


# --------------------------------------------------------------------------- speed and reference file


@with_config(STRICT)
class Speed(TypedDict):
    """Native onnxruntime's latency on golden set 0, the fastest of its runs at build time (a ranking aid)."""

    native_ms: float
    runs: Count
    inputs: str
    onnxruntime_threads: Union[int, None]


@with_config(STRICT)
class Reference(TypedDict):
    """The variant's reference file: golden rows and native onnxruntime's outputs on them."""

    file: ArtifactPath
    sha256: Sha256
    bytes: Count
    rows: Count
    golden_set: Count


# --------------------------------------------------------------------------- how it was made


@with_config(STRICT)
class Refusal(TypedDict):
    """An fp16 file onnxruntime would not load or run (convert/fp16/refusals.py): its whole error, and
    the nodes the next conversion kept in float for it."""

    kept: list[str]
    error: str


class Settings(TypedDict, total=False):
    """What made the variant (convert/lower_precision.py): fp16 conversion or int8 quantization."""

    tool: str
    keep_io_types: bool
    blocked_nodes: list[str]
    blocked_ops: list[str]
    overflow_threshold: float
    weight_type: str
    activation_type: str
    per_channel: bool
    preprocess: str
    format: str
    calibration_method: str
    calibration_batches: Count
    kept_float: list[str]
    op_types: list[str]
    extra_options: JsonObject
    refusals: list[Refusal]  # fp16: what onnxruntime refused, and what was kept in float for it
    weights: str  # int8-weights, int4: how the weights are stored (convert/int8/weights.py, convert/variants/int4.py)
    weights_stored: Count  # weights stored in int8 behind DequantizeLinear
    weights_4bit: Count  # int4: MatMul weights and embedding tables in 4-bit blocks
    weights_8bit: Count  # int4: the fallback's nodes, in 8-bit blocks


@with_config(STRICT)
class FallbackTry(TypedDict):
    kept: Count
    result: str


@with_config(STRICT)
class Fallback(TypedDict):
    """The search for nodes to keep in float when the first conversion missed its budget."""

    first_reason: str
    kept_float: list[str]
    limit: Count
    tries: list[FallbackTry]
    ranking: NotRequired[str]  # "error introduced" or "graph order"


# --------------------------------------------------------------------------- forms of a variant


@with_config(STRICT)
class FormHow(TypedDict):
    """How a form was made: what every form's record says, made or not (convert/forms/)."""

    format: Literal["ort", "onnx"]
    optimization: Literal["extended", "basic", "transformer", "tree-gemm"]
    tool: str
    runtimes: Union[list[BrowserRuntime], None]  # the browser runtimes it is for; null: every one
    fusions: NotRequired[dict[str, Count]]  # `fused`: fused operator -> how many


class MadeForm(FormHow):
    """Made, run on the golden inputs and judged against fp32 by the variant's budget; `ok` is served."""

    status: Literal["ok", "rejected"]
    reason: Union[str, None]
    reason_data: NotRequired[reasons.Rejection]  # `rejected` by the budget: the reason as data (accuracy/reasons.py)
    file: ArtifactPath
    sha256: Sha256
    bytes: Count
    size_ratio: float  # to the variant's bytes
    vs_fp32: Measurement
    vs_variant: Measurement
    reference: Reference
    operators: NotRequired[dict[str, Count]]  # `.onnx` forms


@with_config(STRICT)
class FailedForm(TypedDict):
    """onnxruntime could not make or load it: no file."""

    status: Literal["rejected"]
    reason: str
    format: NotRequired[Literal["ort", "onnx"]]
    optimization: NotRequired[Literal["extended", "basic", "transformer", "tree-gemm"]]
    tool: NotRequired[str]
    runtimes: NotRequired[Union[list[BrowserRuntime], None]]
    fusions: NotRequired[dict[str, Count]]


Form = Union[MadeForm, FailedForm]


class Forms(TypedDict, total=False):
    """A served variant's optimized forms (convert/forms/); `fused` only for a declared transformer, `gemm`
    only for a variant with tree ensembles."""

    ort: Form
    basic: Form
    fused: Form
    gemm: Form


# --------------------------------------------------------------------------- variant records


@with_config(STRICT)
class _Measured(TypedDict):
    precision: Precision
    # What people are shown (variant_table.label): the name, or "original (int8)" for an already-quantized
    # model's `fp32`. Absent in repositories built before it: read the variant's name.
    label: NotRequired[str]
    file: ArtifactPath
    sha256: Sha256
    bytes: Count
    size_ratio: float
    arithmetic: Arithmetic  # picks `budget`: the file's, not the variant name's
    operators: dict[str, Count]
    operator_types: list[str]  # sorted "domain/OpType", subgraphs included
    vs_fp32: Measurement
    vs_source: Measurement
    budget: Budget
    judged_on: Literal["real", "synthetic"]  # the golden inputs vs_fp32 and the verdict used
    settings: Settings
    speed: Speed
    reference: Reference
    accuracy: NotRequired[float]
    fallback: NotRequired[Fallback]


@with_config(STRICT)
class ServedVariant(_Measured):
    """Within its budget: served."""

    status: Literal["ok"]
    reason: None
    forms: Forms


@with_config(STRICT)
class OverBudgetVariant(_Measured):
    """Made and measured, outside its budget: kept in the manifest, not served."""

    status: Literal["rejected"]
    reason: str
    # The budget's reason as data (accuracy/reasons.py), which `reason` words; absent in repositories built before it.
    reason_data: NotRequired[reasons.Rejection]


@with_config(STRICT)
class FailedVariant(TypedDict):
    """The converter crashed, or onnxruntime would not load or run the result: no file."""

    precision: Precision
    status: Literal["rejected"]
    reason: str  # one line: onnxruntime's refusal names the node, its operator and its reason
    detail: NotRequired[str]  # onnxruntime's whole message, when it refused the file


@with_config(STRICT)
class SkippedVariant(TypedDict):
    """Not worth making or serving (docs/reference/manifest.md, "When a variant is skipped"): nothing to convert or
    quantize, already quantized, not enough smaller than fp32, or static int8 without real calibration data."""

    precision: Precision
    status: Literal["skipped"]
    reason: str


Variant = Union[ServedVariant, OverBudgetVariant, FailedVariant, SkippedVariant]
# Every variant of the table, always (a build writes each one, whatever became of it). Its keys are the table's
# names, known only at run time: pydantic (and so the schema) sees the record, mypy a mapping of name to Variant.
if TYPE_CHECKING:
    Variants: TypeAlias = dict[str, Variant]
else:
    Variants = with_config(STRICT)(TypedDict("Variants", {name: Variant for name in variant_table.NAMES}))


MadeVariant = Union[ServedVariant, OverBudgetVariant]  # a file, measured: served or over budget


def made(variant: Variant) -> TypeGuard[MadeVariant]:
    """True when the variant has a file (served or over budget): its `file`, `reference` and measurements."""
    return "file" in variant


def made_form(form: Form) -> TypeGuard[MadeForm]:
    """True when the form has a file (made and judged, served or not); a failed form has none."""
    return "file" in form


def served(variant: Variant) -> TypeGuard[ServedVariant]:
    """True when the variant is served (status "ok"): its forms too."""
    return variant["status"] == "ok"


def forms_of(variant: Variant) -> dict[str, Form]:
    """A variant's forms by name: a served variant's, none for the others."""
    # Forms is a TypedDict of optional keys, all of them Forms: its values are read as one mapping.
    return cast(dict[str, Form], variant.get("forms") or {}) if served(variant) else {}


def file_of(variant: Variant) -> str:
    """A made variant's file; a KeyError, as reading the key would give, for one that has none."""
    if not made(variant):
        raise KeyError("file")
    return variant["file"]


def outcome(variant: Variant) -> Outcome:
    """What became of a variant: served ("ok"), over budget (rejected with its file), failed (rejected with
    no file) or skipped."""
    if variant["status"] == "ok":
        return "served"
    if variant["status"] == "skipped":
        return "skipped"
    return "over_budget" if made(variant) else "failed"
