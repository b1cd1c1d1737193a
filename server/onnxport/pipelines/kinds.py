"""The raw-input kinds a pipeline takes, one row each. The spec check (spec_check.py) and the V2 server
(serving/v2/raw_input.py) find a kind's parts here, so a new kind is its module in this folder (its spec check
and its request feeds, importing only spec.py's types), its spec's type in spec.py's PipelineSpec, and its row
below.
web/lib/pipelines/pipeline.js holds the browser's side the same way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, cast

import numpy as np

from onnxport.pipelines import image, text
from onnxport.pipelines.raw import Limits
from onnxport.pipelines.spec import PipelineSpec


@dataclass(frozen=True)
class Kind:
    name: str  # the raw input's name in a V2 request, and its spec's key in the pipeline
    article: str  # "a text pipeline", "an image pipeline"
    # (the kind's spec, where it comes from, the model's asset labels) -> {spec key: graph input it names};
    # SpecError on a spec that cannot run
    check_spec: Callable[[Any, str, list[str]], dict[str, str]]
    # (the kind's spec, the request's BYTES tensor, the limits, an asset's file by label) -> the model's feeds;
    # RawInputError (OverLimit) on input it refuses
    feeds: Callable[[Any, np.ndarray, Limits, Callable[[str], Path]], dict[str, np.ndarray]]


KINDS = {
    kind.name: kind
    for kind in (
        Kind("text", "a", text.check_spec, text.request_feeds),
        Kind("image", "an", image.check_spec, image.request_feeds),
    )
}


def spec_of(spec: PipelineSpec, kind: Kind) -> Any:
    """The kind's own spec inside a pipeline spec (its key is the kind's name)."""
    return cast(Mapping[str, Any], spec)[kind.name]


def of(spec: Mapping[str, object]) -> Kind:
    """The kind of a pipeline spec that validate() passed (exactly one kind's key)."""
    return next(kind for name, kind in KINDS.items() if name in spec)
