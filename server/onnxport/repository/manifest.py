"""The manifest's types: every key `onnxport build` and `onnxport import` write (docs/reference/manifest.md).

TypedDicts, so the build keeps writing plain dicts and readers keep reading them; schema.py turns
these into the JSON Schema published at /api/manifest.schema.json. Records forbid unknown keys
(`with_config(STRICT)`), so a key the build writes without a type here fails the schema tests.
This module holds the manifest and its model entries; a variant's record is in variant_record.py, its
measurements in accuracy/measured.py. Enumerations come from their one table: variant names and precisions from
repository/variant_table.py; the schema's name and version, the tasks, source frameworks and playground kinds
are defined here, the lowest layer that needs them (recipe.py validates recipes against them).
"""

from typing import Literal, Union, get_args

from pydantic import with_config
from typing_extensions import NotRequired, TypedDict

from onnxport.accuracy.measured import Validation
from onnxport.json_boundary import JsonObject
from onnxport.json_fields import STRICT, ArtifactPath, Count, Sha256, TestdataPath
from onnxport.pipelines.spec import PipelineSpec
from onnxport.repository.decoder_record import DecoderEntry
from onnxport.repository.variant_record import Variants

SCHEMA = "onnxport.manifest"
# 2: budgets are Tolerance records (top1_min, rel as a relative error); entries carry playground, bench_inputs.
# 3: the weight-only variants int8-weights and int4 beside the others, and their settings.
SCHEMA_VERSION = 3

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

Kind = Literal[Framework, "onnx"]


# --------------------------------------------------------------------------- the model's signature


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
    facts: JsonObject
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

    schema: Literal[SCHEMA]  # type: ignore[valid-type]
    schema_version: Literal[SCHEMA_VERSION]  # type: ignore[valid-type]
    models: dict[str, ModelEntry]
    # Decoders for generation (repository/decoder_record.py), from `onnxport build` of decoder recipes; absent
    # where none was built (version 3 manifests written before them read as before).
    decoders: NotRequired[dict[str, DecoderEntry]]
