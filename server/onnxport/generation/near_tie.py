"""The near-tie rule: where the reference's two best logits are this close, the reference had no clear choice.

A candidate that picks the other of the two has not diverged from the reference: the comparison of a greedy
continuation ends there, as equal (generation/agreement.py). The rule is written once here, and the browser
library reads it from tests/vectors/near_tie_vectors.json (issue 47): the same logits give the same answer in
both languages.

The rule, exactly: take the two largest logits (equal values count twice), as float64, best and second;
a near-tie is `best - second <= MARGIN`. Fewer than two logits, or a NaN among them, is no near-tie; so are
two best of +inf (their difference is NaN), as IEEE arithmetic has it in both languages.
"""

from __future__ import annotations

import numpy as np

# A logit difference of 0.1 is a probability ratio of e^0.1 = 1.105 between the two best tokens: the model
# is within about 10% of indifferent between them. An fp16 file's logits (magnitudes 10-30, steps of 2^-6 to
# 2^-5 there) and an int8 file's move by a few hundredths to tenths, enough to swap such a pair, while a gap
# wider than 0.1 that flips is a change of what the model says, not of its rounding.
MARGIN = 0.1


def is_near_tie(logits: np.ndarray) -> bool:
    """Whether the two best of these logits (one step's, any shape, read flat) are within MARGIN."""
    values = np.asarray(logits, dtype=np.float64).ravel()
    if values.size < 2 or bool(np.isnan(values).any()):
        return False
    second, best = np.partition(values, values.size - 2)[-2:]
    with np.errstate(invalid="ignore"):  # inf - inf is NaN, and NaN <= MARGIN is False: no near-tie
        return bool(best - second <= MARGIN)
