"""Write tests/vectors/answer_vectors.json: Python's answer steps (pipelines/answers.py) on fixed outputs.

Every op, chains of them, a mean pool over a padded batch (the first text padded) and CTC, on outputs drawn from a
seeded generator; each case holds the spec, the output and feeds ({dims, data, type}) and the answers Python gives.
tests/pipelines/test_answer_vectors.py fails when the file is not what this script writes now;
tests/js/lib/pipelines/test_answer_vectors.mjs runs web/lib/pipelines/answers.js on the same cases.
Run: .venv/bin/python tests/vectors/make_answer_vectors.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from onnxport.pipelines import answers

OUT = Path(__file__).with_name("answer_vectors.json")

RNG = np.random.default_rng(7)
LOGITS = RNG.normal(size=(3, 10)).astype(np.float32)
HIDDEN = RNG.normal(size=(2, 5, 4)).astype(np.float32)  # [batch, tokens, hidden]
MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int64)  # the first text padded
STEPS = np.eye(4, dtype=np.float32)[[1, 1, 0, 2, 2, 0, 3, 3]][None] * 3  # [1, time, symbols]

CASES = [
    ({"output": "o", "steps": []}, LOGITS, {}),
    ({"output": "o", "steps": [{"op": "softmax"}, {"op": "top_k", "k": 3, "labels": list("abcdefghij")}]}, LOGITS, {}),
    ({"output": "o", "steps": [{"op": "sigmoid"}, {"op": "argmax"}]}, LOGITS, {}),
    ({"output": "o", "steps": [{"op": "normalize"}]}, LOGITS, {}),
    ({"output": "o", "steps": [{"op": "mean_pool", "mask": "mask"}, {"op": "normalize"}]}, HIDDEN, {"mask": MASK}),
    ({"output": "o", "steps": [{"op": "softmax"}, {"op": "ctc", "vocabulary": ["_", "a", "b", "c"]}]}, STEPS, {}),
]


def encoded(value: np.ndarray) -> dict[str, Any]:
    return {
        "dims": list(value.shape),
        "data": value.reshape(-1).tolist(),
        "type": "int64" if value.dtype.kind == "i" else "float32",
    }


def plain(value: Any) -> Any:
    """An answer as JSON: arrays and numpy numbers as lists and floats."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def build() -> list[dict[str, Any]]:
    return [
        {
            "spec": spec,
            "output": encoded(output),
            "feeds": {k: encoded(v) for k, v in feeds.items()},
            "answers": plain(answers.answers(spec, output, feeds)),
        }
        for spec, output, feeds in CASES
    ]


def main() -> None:
    OUT.write_text("[\n" + ",\n".join(json.dumps(v, allow_nan=False) for v in build()) + "\n]\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
