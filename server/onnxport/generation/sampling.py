"""How the next token is chosen from a step's logits: greedy, or sampled with temperature, top-k and top-p.

A seed makes a sampled run repeatable: the draws come from numpy's Generator seeded with it, one uniform
draw per token, so two runs over the same logits pick the same tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class SamplingError(ValueError):
    """A sampling setting out of range or of the wrong type: names the field, what was expected and what came."""

    def __init__(self, field: str, expected: str, came: object):
        super().__init__(f"sampling {field}: expected {expected}, got {came!r}")
        self.field = field
        self.expected = expected
        self.came = came


@dataclass(frozen=True)
class Sampling:
    max_new_tokens: int = 64
    temperature: float = 0.0  # 0 = greedy: the best logit, top_k, top_p and seed unused
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off
    seed: int | None = None
    stop: tuple[str, ...] = ()

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def checked(self) -> Sampling:
        """self, or a SamplingError for the first field out of range (values may come from a request's JSON)."""
        if not _is_int(self.max_new_tokens) or self.max_new_tokens < 1:
            raise SamplingError("max_new_tokens", "an integer >= 1", self.max_new_tokens)
        if not _is_number(self.temperature) or not math.isfinite(self.temperature) or self.temperature < 0:
            raise SamplingError("temperature", "a finite number >= 0 (0 = greedy)", self.temperature)
        if not _is_int(self.top_k) or self.top_k < 0:
            raise SamplingError("top_k", "an integer >= 0 (0 = off)", self.top_k)
        if not _is_number(self.top_p) or not 0 < self.top_p <= 1:
            raise SamplingError("top_p", "a number in (0, 1] (1 = off)", self.top_p)
        if self.seed is not None and (not _is_int(self.seed) or not 0 <= self.seed < 2**64):
            raise SamplingError("seed", "null or an integer in [0, 2**64)", self.seed)
        if not isinstance(self.stop, tuple) or not all(isinstance(s, str) and s for s in self.stop):
            raise SamplingError("stop", "a tuple of non-empty strings", self.stop)
        return self

    def rng(self) -> np.random.Generator:
        """The draws of one generation: seeded when a seed is set, fresh entropy otherwise."""
        return np.random.default_rng(self.seed)


def next_token(logits: np.ndarray, sampling: Sampling, rng: np.random.Generator) -> int:
    """The chosen token id: the first best logit when greedy, else a draw from the masked, tempered softmax."""
    if sampling.greedy:
        return int(np.argmax(logits))
    scores = np.asarray(logits, dtype=np.float64) / sampling.temperature
    keep = np.isfinite(scores)
    if not keep.any():  # every logit infinite or NaN: nothing to draw from, so the first best stands
        return int(np.argmax(logits))
    # Each mask applies to what the one before it kept, as Transformers' warpers do: top-p's mass is that of the
    # top-k tokens.
    scores = np.where(keep, scores, -np.inf)
    if sampling.top_k:
        scores = np.where(top_k_mask(scores, sampling.top_k), scores, -np.inf)
    if sampling.top_p < 1:
        scores = np.where(top_p_mask(scores, sampling.top_p), scores, -np.inf)
    keep = np.isfinite(scores)
    kept = np.flatnonzero(keep)
    weights = np.exp(scores[kept] - scores[kept].max())
    cumulative = np.cumsum(weights)
    pick = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return int(kept[min(pick, len(kept) - 1)])


def top_k_mask(scores: np.ndarray, k: int) -> np.ndarray:
    """True for the k best scores (ties at the k-th broken by the lower id), False elsewhere."""
    keep = np.zeros(scores.shape, dtype=bool)
    keep[_best_first(scores)[:k]] = True
    return keep


def top_p_mask(scores: np.ndarray, p: float) -> np.ndarray:
    """True for the fewest best tokens whose probabilities (softmax of scores) sum to at least p; the best always."""
    order = _best_first(scores)
    weights = np.exp(scores[order] - scores[order[0]])
    probs = weights / weights.sum()
    before = np.cumsum(probs) - probs  # the mass of the better tokens
    keep = np.zeros(scores.shape, dtype=bool)
    keep[order[before < p]] = True
    return keep


def _best_first(scores: np.ndarray) -> np.ndarray:
    """Indices from the best score down, equal scores by the lower index (a stable sort), NaN last."""
    return np.argsort(-np.where(np.isnan(scores), -np.inf, scores), kind="stable")


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
