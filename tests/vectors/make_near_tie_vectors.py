"""Write tests/vectors/near_tie_vectors.json: the near-tie rule (generation/near_tie.py) on logits, case by case.

Each case holds one step's logits, float32 values written as the doubles they are (a model's logits are float32;
both languages compare them in float64), and whether the two best are a near-tie (best - second <= MARGIN). The
cases near the margin are where float32 rounding decides: 30 and 29.9 in float32 are 0.1000004 apart.
tests/generation/test_near_tie_vectors.py fails when the file is not what this script writes now; the browser
library's generation check (issue 47) reads the same file.
Run: .venv/bin/python tests/vectors/make_near_tie_vectors.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from onnxport.generation.near_tie import MARGIN, is_near_tie

OUT = Path(__file__).with_name("near_tie_vectors.json")

CASES: list[tuple[str, list[float]]] = [
    ("a clear best", [5.0, 1.0, 0.0]),
    ("two equal best", [2.0, 2.0, 1.0]),
    ("three equal best", [4.0, 4.0, 4.0]),
    ("best second, within the margin", [-3.0, 7.5, 7.45, 7.0]),
    ("within the margin, negative", [-1.0, -1.05, -9.0]),
    ("exactly representable, inside", [10.0, 9.90625]),
    ("exactly representable, outside", [10.0, 9.875]),
    ("0.5 and 0.4 in float32: 0.09999999 apart", [0.5, 0.4]),
    ("1.1 and 1.0 in float32: 0.10000002 apart", [1.1, 1.0]),
    ("30 and 29.9 in float32: 0.1000004 apart", [30.0, 29.9]),
    ("one logit: no second", [1.0]),
    ("no logits", []),
]


def _float32(values: list[float]) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float32)]


def _vocabulary_case(seed: int, gap: float) -> list[float]:
    """256 logits of a seeded draw with the best two set `gap` apart, the best somewhere in the middle."""
    logits = np.random.default_rng(seed).normal(0, 2, 256).astype(np.float32)
    logits[117], logits[83] = 12.0, 12.0 - gap
    return _float32(list(logits))


def build() -> dict[str, Any]:
    cases = [(label, _float32(values)) for label, values in CASES]
    cases += [("a vocabulary, best two 0.05 apart", _vocabulary_case(46, 0.05))]
    cases += [("a vocabulary, best two 0.25 apart", _vocabulary_case(47, 0.25))]
    return {
        "about": "Written by tests/vectors/make_near_tie_vectors.py from server/onnxport/generation/near_tie.py.",
        "margin": MARGIN,
        "rule": "the two largest logits as float64 (equal values count twice): best - second <= margin",
        "cases": [
            {"label": label, "logits": values, "near_tie": is_near_tie(np.asarray(values, dtype=np.float32))}
            for label, values in cases
        ],
    }


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    print(f"wrote {len(data['cases'])} cases to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
