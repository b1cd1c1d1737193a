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
