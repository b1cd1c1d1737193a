"""The manifest's types: every key `onnxport build` and `onnxport import` write (docs/reference/manifest.md).

TypedDicts, so the build keeps writing plain dicts and readers keep reading them; schema.py turns
these into the JSON Schema published at /api/manifest.schema.json. Records forbid unknown keys
(`with_config(STRICT)`), so a key the build writes without a type here fails the schema tests.
Enumerations come from their one table: variant names and precisions from repository/variant_table.py,
the schema name and version from store.py; the tasks, source frameworks and playground kinds are
defined here, the lowest layer that needs them (recipe.py validates recipes against them).
"""

import re
from typing import Annotated, Any, Literal, TypeAlias, Union, get_args

from pydantic import ConfigDict, Field, with_config
from typing_extensions import NotRequired, TypedDict

from onnxport.accuracy import browser_runtimes, budgets
from onnxport.pipelines.spec import PipelineSpec
from onnxport.repository import store, variant_table

# detection-map: a per-pixel score map (text or object detectors), judged by its mean error;
# sequence: a score vector per step (recognizers, taggers), judged by per-step top-1 agreement.
Task = Literal["classification", "regression", "embedding", "detection-map", "sequence", "generic"]
Framework = Literal["pytorch", "sklearn", "lightgbm", "xgboost"]
# The playground's input widgets (web/app/pages/playground.js): four measurements, an 8x8 drawing,
# two sentences (tokenized with the model's tokenizer assets), or the model's own golden inputs.
Playground = Literal["tabular", "image-8x8", "sentence-pair", "generic"]
TASKS: tuple[str, ...] = get_args(Task)
FRAMEWORKS: tuple[str, ...] = get_args(Framework)
PLAYGROUNDS: tuple[str, ...] = get_args(Playground)

STRICT = ConfigDict(extra="forbid")  # additionalProperties false in the schema

Kind = Literal[Framework, "onnx"]
Status = Literal["ok", "rejected", "skipped"]
# Enumerations read from their tables at run time: pydantic (and so the schema) sees their values;
# mypy cannot read a Literal built at run time, and takes them as plain aliases (the ignores).
VariantName: TypeAlias = Literal[variant_table.NAMES]  # type: ignore[valid-type]
Precision: TypeAlias = Literal[tuple(dict.fromkeys(v.precision for v in variant_table.VARIANTS))]  # type: ignore[valid-type]
Arithmetic: TypeAlias = Literal[budgets.ARITHMETICS]  # type: ignore[valid-type]  # what a variant's file computes
BrowserRuntime: TypeAlias = Literal[browser_runtimes.NAMES]  # type: ignore[valid-type]

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
ArtifactPath = Annotated[str, Field(pattern=r"^artifacts/[0-9a-f]{64}\.[A-Za-z0-9]+$")]
TestdataPath = Annotated[str, Field(pattern=r"^testdata/[0-9a-f]{64}$")]
Count = Annotated[int, Field(ge=0)]
# A value as JSON has it: a number, a bool, or "nan" / "inf" / "-inf" written as text.
Scalar = Union[int, float, bool, str]


# --------------------------------------------------------------------------- the model's signature


@with_config(STRICT)
@with_config(STRICT)
class ValueInfo(TypedDict):
    """A graph input or output. `shape` is null when the graph declares none; a dimension is an
    int, a name (a string such as "batch") or -1 (dynamic, unnamed)."""

    name: str
    dtype: str
    shape: Union[list[Union[int, str]], None]


@with_config(STRICT)
class Producer(TypedDict):
    name: str
    version: str


class Provenance(TypedDict, total=False):
    """What the build started from: a recipe's keys, or an import's (`import_path`, `calibration`)."""

    recipe: Union[str, None]
    recipe_sha256: str
    opset_requested: int
    calibration_sha256: Sha256
    import_path: str
    calibration: str
    calibration_data: Literal["real", "synthetic"]
    tools: dict[str, str]


# --------------------------------------------------------------------------- measurements


@with_config(STRICT)
class FirstMismatch(TypedDict):
    set: Count
    index: list[Count]
    expected: Scalar
    got: Scalar


@with_config(STRICT)
class ShapeMismatch(TypedDict):
    expected: list[Count]
    got: list[Count]


@with_config(STRICT)
@with_config(STRICT)
class OutputErrors(TypedDict):
    """One output's errors over every golden set (accuracy/measure.py)."""

    max_abs: float
    mean_abs: float
    max_rel: float
    nonfinite: Count
    scale: float
    mismatches: NotRequired[Count]
    first_mismatch: NotRequired[FirstMismatch]
    shape_mismatch: NotRequired[ShapeMismatch]


class Metric(TypedDict, total=False):
    """The task metric on `metric_output`: classification, embedding, or any other task."""

    top1_agreement: float
    cosine_min: float
    cosine_mean: float
    scaled_max_abs: float
    scaled_mean_abs: float
    step_agreement: float


@with_config(STRICT)
@with_config(STRICT)
class Measurement(TypedDict):
    """`vs_fp32`, `vs_source`: a variant's outputs on the golden inputs against a reference."""

    outputs: dict[str, OutputErrors]
    metric: NotRequired[Metric]
    within_tolerance: Union[bool, None]


@with_config(STRICT)
class ElementTolerance(TypedDict):
    abs: Union[float, None]
    rel: Union[float, None]


class Validation(Measurement):
    """The fp32 export against the source framework, judged with the recipe's tolerance
    (`within_tolerance` is always true in a written manifest: a failing export fails the build)."""

    tolerance: ElementTolerance


@with_config(STRICT)
@with_config(STRICT)
class Budget(TypedDict):
    """accuracy/tolerance.py's Tolerance as JSON (`Tolerance.as_json`), every field present."""

    abs: Union[float, None]
    rel: Union[float, None]
    top1_min: Union[float, None]
    cosine_min: Union[float, None]
    scaled_max_abs: Union[float, None]
    scaled_mean_abs: Union[float, None]
    why: str


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
    extra_options: dict[str, Any]
    refusals: list[Refusal]  # fp16: what onnxruntime refused, and what was kept in float for it
    weights: str  # int8-weights, int4: how the weights are stored (convert/int8/weights.py, nbits.py)
    weights_stored: Count  # weights stored in int8 behind DequantizeLinear
    weights_4bit: Count  # int4: MatMul weights and embedding tables in 4-bit blocks
    weights_8bit: Count  # int4: the fallback's nodes, in 8-bit blocks


@with_config(STRICT)
class FallbackTry(TypedDict):
    kept: Count
    result: str


@with_config(STRICT)
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
class _FormHow(TypedDict):
    format: Literal["ort", "onnx"]
    optimization: Literal["extended", "basic", "transformer", "tree-gemm"]
    tool: str
    runtimes: Union[list[BrowserRuntime], None]  # the browser runtimes it is for; null: every one
    fusions: NotRequired[dict[str, Count]]  # `fused`: fused operator -> how many


class MadeForm(_FormHow):
    """Made, run on the golden inputs and judged against fp32 by the variant's budget; `ok` is served."""

    status: Literal["ok", "rejected"]
    reason: Union[str, None]
    file: ArtifactPath
    sha256: Sha256
    bytes: Count
    size_ratio: float  # to the variant's bytes
    vs_fp32: Measurement
    vs_variant: Measurement
    reference: Reference
    operators: NotRequired[dict[str, Count]]  # `.onnx` forms


@with_config(STRICT)
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
# Every variant of the table, always (a build writes each one, whatever became of it).
Variants: TypeAlias = with_config(STRICT)(  # type: ignore[valid-type]
    TypedDict("Variants", {name: Variant for name in variant_table.NAMES})  # type: ignore[operator]
)


# --------------------------------------------------------------------------- files beside the model


@with_config(STRICT)
class Golden(TypedDict):
    path: TestdataPath
    sha256: Sha256
    sets: Count
    outputs_from: Literal["source framework", "imported test data or fp32"]


@with_config(STRICT)
class Asset(TypedDict):
    file: ArtifactPath
    sha256: Sha256
    bytes: Count
    name: str


@with_config(STRICT)
class EncodedTensor(TypedDict):
    """tensor_json.py's form: dtype, shape, and the little-endian bytes in base64."""

    dtype: str
    shape: list[Count]
    data: str


# --------------------------------------------------------------------------- the model entry, the manifest


@with_config(STRICT)
class ModelEntry(TypedDict):
    name: str
    description: str
    task: Task
    kind: Kind
    metric_output: Union[str, None]
    build_key: Sha256
    opset: Union[int, None]
    opsets: dict[str, int]
    ir_version: int
    producer: Producer
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    operators: dict[str, Count]
    facts: dict[str, Any]
    provenance: Provenance
    validation: Validation
    playground: Playground
    bench_inputs: Union[dict[str, EncodedTensor], None]
    golden_data: Literal["real", "synthetic"]
    batch_axis: bool
    variants: Variants
    golden: Golden
    assets: dict[str, Asset]
    pipeline: NotRequired[PipelineSpec]


@with_config(STRICT)
class Manifest(TypedDict):
    """models/.repository/manifest.json: the one contract between the build and its readers."""

    schema: Literal[store.SCHEMA]  # type: ignore[valid-type]
    schema_version: Literal[store.SCHEMA_VERSION]  # type: ignore[valid-type]
    models: dict[str, ModelEntry]


def batch_axis(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> bool:
    """The one rule for a model's first dimension being a batch axis (rows that can be cut or
    stacked): every input and every output has a dynamic first dimension (a name, or -1), every
    input has rank >= 2 (a 1-D input is a sequence, not rows: cutting it cuts the sequence), and the
    inputs' named first dimensions agree (one name, or unnamed). Outputs' names are not compared:
    exporters and shape inference name them as they like (`unk__0`, `Gemm_dim_0`). Written as the
    entry's `batch_axis`; golden rows are cut (reference files, the check's WebGPU rows, the bench)
    and requests batched (the server, the Triton export) only when it holds."""
    values = [*inputs, *outputs]
    if not inputs or any(not v["shape"] for v in values):  # no shape, or a scalar
        return False
    if any(isinstance(v["shape"][0], int) and v["shape"][0] >= 0 for v in values):
        return False
    if any(len(v["shape"]) < 2 for v in inputs):
        return False
    names = {v["shape"][0] for v in inputs if isinstance(v["shape"][0], str) and shared_dimension(v["shape"][0])}
    return len(names) <= 1


# An identifier-like dim_param: what an exporter writes for a dimension it means to name.
DIMENSION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")


def shared_dimension(dim_param: str) -> str | None:
    """The name a dimension must agree on wherever it appears, or None for one that only says "unknown":
    onnx shape inference's `unk__N`, paddle2onnx's `?`, "None", or no identifier at all. The server's
    request check, batch-axis detection and a user's --data check all read names through this one rule."""
    if dim_param == "None" or not DIMENSION_NAME.match(dim_param) or re.fullmatch(r"unk__\d+", dim_param):
        return None
    return dim_param


def batch_axis_dynamic(entry: dict[str, Any]) -> bool:
    """batch_axis of a model entry (its inputs and outputs): the server's batching and the Triton export."""
    return batch_axis(entry["inputs"], entry["outputs"])
