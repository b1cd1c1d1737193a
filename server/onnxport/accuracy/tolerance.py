"""How close is close enough: the one type for the recipe's export check, the variant budgets and
the browser tolerance table.

Element rule (the same in web/lib/verification/compare.js, pinned by tests/vectors/compare_vectors.json): a float
value passes when both are NaN, both are the same infinity, |expected - got| <= abs, or both have
the same sign and max(got/expected, expected/got) <= 1 + rel. Integer and bool values must be
equal. A bound left at None is not judged element by element (budgets judge the task metric only).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from onnxport.json_boundary import JsonObject


@dataclass(frozen=True)
class Tolerance:
    abs: float | None = None  # largest absolute difference per element
    rel: float | None = None  # largest relative difference per element (1e-6: one part in a million)
    top1_min: float | None = None  # classifiers: share of rows whose top class matches the reference
    cosine_min: float | None = None  # embeddings: worst cosine similarity to the reference
    scaled_max_abs: float | None = None  # other tasks: max |error| / max |reference value|
    scaled_mean_abs: float | None = None  # detection maps: mean |error| / max |reference value|
    why: str = ""

    @property
    def elementwise(self) -> bool:
        return self.abs is not None or self.rel is not None

    def as_json(self) -> JsonObject:
        return asdict(self)
