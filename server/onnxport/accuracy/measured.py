"""What comparing two sets of outputs measures, and the budget it is judged by: the records under `vs_fp32`,
`vs_source`, `validation` and `budget` in manifest.json (measure.py writes them, judgement.py reads them).

TypedDicts, as the rest of the manifest's types (repository/manifest.py includes these), so the JSON Schema
carries them; defined here, the lowest layer that writes them.
"""

from typing import Union

from pydantic import with_config
from typing_extensions import NotRequired, TypedDict

from onnxport.json_fields import STRICT, Count, Scalar


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
class GenerationMeasurement(TypedDict):
    """A decoder variant's generation metrics against the fp32 decoder (generation/agreement.py measures them):
    greedy continuations of the recipe's prompts, and next-token scores on its held-out text."""

    prompts: Count
    new_tokens: Count
    greedy_equal_share: float  # prompts whose greedy continuation equals fp32's (a near-tie is no divergence)
    mean_first_divergence: Union[float, None]  # over the prompts that diverge; null when none does
    # each prompt's step of first divergence, in order, null where it does not (older manifests lack it)
    first_divergences: NotRequired[list[Union[Count, None]]]
    text_tokens: Count
    top1_agreement: float  # held-out text: the share of next-token argmaxes equal to fp32's
    nll_reference: float  # fp32's mean negative log-likelihood per token, in nats
    nll_candidate: float
    nll_change: float  # the variant's less fp32's: > 0 is worse


@with_config(STRICT)
class GenerationBudget(TypedDict):
    """accuracy/budgets.py's GENERATION budget as JSON: what a decoder variant is served within."""

    top1_min: float
    nll_change_max: float
    why: str
