"""The `pipeline` key of a model entry (docs/reference/manifest.md), as types: how raw input becomes the model's tensors
and how its outputs become an answer. Recipes declare it (`Recipe.pipeline`), `onnxport import` writes it from its
options, and both sides run it: Python in this folder (text.py, image.py, answers.py), the browser in
web/lib/pipelines/pipeline.js.

TypedDicts, as the rest of the manifest (repository/manifest.py includes these), so the JSON Schema and the
checks come from one declaration. This module is the base the kinds' modules import; spec_check.py, which reads
the kinds' table (kinds.py), validates a spec a user wrote and names the first key that is wrong.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import ConfigDict, Field, with_config
from typing_extensions import NotRequired, TypedDict

STRICT = ConfigDict(extra="forbid")
Positive = Annotated[int, Field(ge=1)]


@with_config(STRICT)
class TextInputs(TypedDict):
    """Which graph input gets the token ids, the attention mask and the token type ids (null: the model has none)."""

    ids: str
    mask: Union[str, None]
    type_ids: Union[str, None]


@with_config(STRICT)
class TextSpec(TypedDict):
    """A Hugging Face tokenizer (`tokenizer.json`, published as one of the model's assets) and how it is applied.
    The truncation and padding written inside tokenizer.json are NOT used: a sentence-transformers model, for one,
    truncates at its own max_seq_length, not at the file's. Special tokens are added after truncation, so a text
    past max_length keeps its closing token ([SEP])."""

    tokenizer: str  # the asset label of tokenizer.json
    config: Union[str, None]  # the asset label of tokenizer_config.json (special tokens, casing), if published
    max_length: Positive  # tokens per text, special tokens included
    truncation: Literal["right", "left"]
    padding: Literal["longest"]  # a batch is padded to its longest text, with the tokenizer's pad token
    pair: bool  # texts come in pairs (a cross-encoder, question answering)
    inputs: TextInputs
    dtype: Literal["int64", "int32"]


@with_config(STRICT)
class Resize(TypedDict):
    width: Positive
    height: Positive
    filter: Literal["nearest", "bilinear", "bicubic", "box", "lanczos"]  # Pillow's, antialiased on shrinking


@with_config(STRICT)
class ImageSpec(TypedDict):
    """An image file (PNG, JPEG...) made into one input tensor: decoded, turned upright by its EXIF orientation,
    converted to `mode`, resized, center-cropped, then value = ((pixel / 255 if invert is false, else
    1 - pixel / 255) * scale - mean[c]) / std[c] for each channel c, laid out as `layout`."""

    input: str  # the graph input it feeds
    mode: Literal["RGB", "BGR", "L"]  # channel order (BGR: OpenCV-trained models), or grey; alpha over white first
    resize: Resize
    crop: Union[Resize, None]  # a center crop after resizing (its filter is not used), or none
    invert: bool  # dark ink on light paper becomes high values (sklearn's digits are such)
    scale: float
    mean: list[float]  # one per channel
    std: list[float]
    layout: Literal["NCHW", "NHWC", "flat"]  # flat: one row of height*width*channels values
    dtype: Literal["float32"]


@with_config(STRICT)
class AnswerStep(TypedDict):
    """One step from the output tensor to the answer, applied in order to each row."""

    op: Literal["mean_pool", "softmax", "sigmoid", "normalize", "top_k", "argmax", "ctc"]
    mask: NotRequired[str]  # mean_pool: the graph input whose row weighs the tokens (the attention mask)
    k: NotRequired[Positive]  # top_k
    labels: NotRequired[list[str]]  # top_k and argmax: class index -> label
    vocabulary: NotRequired[list[str]]  # ctc: index -> symbol
    blank: NotRequired[int]  # ctc: the blank index


@with_config(STRICT)
class OutputSpec(TypedDict):
    output: str  # the graph output the answer is read from
    steps: list[AnswerStep]


@with_config(STRICT)
class PipelineSpec(TypedDict):
    text: NotRequired[TextSpec]
    image: NotRequired[ImageSpec]
    answer: OutputSpec


class SpecError(ValueError):
    """A pipeline spec that cannot run: which key, what was expected, what came."""
