"""A decoder's entry in manifest.json (`decoders`): a `generation` model built from a GGUF file by a decoder
recipe (recipe.DecoderRecipe, convert/decoder_build.py), and its variants judged by what they generate.

Beside `models`, not in it: a decoder has no fixed signature, golden data or forms; the readers of `models`
(the V2 server, the browser, check, bench) read none of it. Its variants' weights are stored as the other
models' (variant_record.Settings); each has a file or a reason, as the other models' variants.
"""

from typing import Literal, TypeGuard, Union

from pydantic import with_config
from typing_extensions import NotRequired, TypedDict

from onnxport.accuracy.measured import GenerationBudget, GenerationMeasurement
from onnxport.json_fields import STRICT, ArtifactPath, Count, Sha256
from onnxport.repository.variant_record import Outcome, Settings

GENERATION_TASK = "generation"


@with_config(STRICT)
class DecoderFile(TypedDict):
    file: ArtifactPath
    sha256: Sha256
    bytes: Count
    name: str  # its name in a decoder folder (model.onnx, tokenizer.json, ...)


@with_config(STRICT)
class _MadeDecoder(TypedDict):
    file: ArtifactPath
    sha256: Sha256
    bytes: Count
    size_ratio: float  # to fp32's bytes
    settings: Settings
    seconds: float  # making and measuring it
    generation: NotRequired[GenerationMeasurement]  # against fp32; fp32 itself has none


@with_config(STRICT)
class ServedDecoder(_MadeDecoder):
    """fp32, or a variant within the generation budget: served."""

    status: Literal["ok"]
    reason: None


@with_config(STRICT)
class OverBudgetDecoder(_MadeDecoder):
    """Made and measured, outside the generation budget: kept, not served."""

    status: Literal["rejected"]
    reason: str


@with_config(STRICT)
class FailedDecoder(TypedDict):
    """Not made, or not run: no file."""

    status: Literal["rejected", "skipped"]
    reason: str


DecoderVariant = Union[ServedDecoder, OverBudgetDecoder, FailedDecoder]


@with_config(STRICT)
class DecoderCheck(TypedDict):
    """The fp32 export's step-by-step check against the transformers model the GGUF loads into."""

    steps: Count
    max_abs: float
    tolerance: float


@with_config(STRICT)
class DecoderProvenance(TypedDict):
    recipe: str
    recipe_sha256: Sha256
    gguf: str  # the file's name
    gguf_sha256: Sha256
    tools: dict[str, str]


@with_config(STRICT)
class Judged(TypedDict):
    """What the variants were judged on: the recipe's prompts and held-out text."""

    prompts: list[str]
    new_tokens: Count
    text_sha256: Sha256
    text_tokens: Count
    chat: bool  # the prompts went through the model's chat template


@with_config(STRICT)
class DecoderEntry(TypedDict):
    name: str
    description: str
    task: Literal["generation"]
    kind: Literal["gguf"]
    build_key: Sha256
    provenance: DecoderProvenance
    check: DecoderCheck
    judged_on: Judged
    budget: GenerationBudget
    default_variant: str  # the smallest served variant: what a request naming only the model gets
    assets: dict[str, DecoderFile]  # tokenizer.json, generation.json, chat_template.jinja
    variants: dict[str, DecoderVariant]


def made(variant: DecoderVariant) -> TypeGuard[Union[ServedDecoder, OverBudgetDecoder]]:
    return "file" in variant


def outcome(variant: DecoderVariant) -> Outcome:
    """served, over_budget, failed or skipped, as variant_record.outcome() says of the other models' variants."""
    if variant["status"] == "ok":
        return "served"
    if variant["status"] == "skipped":
        return "skipped"
    return "over_budget" if made(variant) else "failed"


def files(entry: DecoderEntry) -> set[str]:
    """Every repository file the entry names."""
    found = {v["file"] for v in entry["variants"].values() if made(v)}
    return found | {a["file"] for a in entry["assets"].values()}
