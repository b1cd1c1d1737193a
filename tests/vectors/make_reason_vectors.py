"""Write tests/vectors/reason_vectors.json: every reason code (accuracy/reasons.py CODES), with a reason of each.

A reason is data, a code and its numbers and names; each language renders its own words. The file holds the codes
in order and one reason per code (several where the numbers matter: inf, NaN, the serving bound), each with
Python's words (`python`). tests/accuracy/test_reasons.py checks the file against this script and reasons.render;
tests/js/lib/verification/test_reasons.mjs checks that web/lib/verification/reasons.js knows the same codes and
renders every reason here. Run: .venv/bin/python tests/vectors/make_reason_vectors.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from onnxport.accuracy.reasons import CODES, render

OUT = Path(__file__).with_name("reason_vectors.json")


def bound(code: str, value: float | str, limit_bound: float, against: str = "fp32", limit: str = "budget", **more):
    return {"code": code, "value": value, "bound": limit_bound, "against": against, "limit": limit, **more}


REASONS: list[dict[str, Any]] = [
    bound("top1_below_bound", 0.75, 0.97),
    bound("top1_below_bound", 0.0, 1.0, against="server_run", limit="floor"),
    bound("cosine_below_bound", 0.97, 0.98),
    bound("cosine_below_bound", "NaN", 1e-05),
    bound("step_agreement_below_bound", 0.95, 0.97),
    bound("mean_error_above_bound", 0.0123456, 0.01),
    bound("mean_error_above_bound", 0.0095, 0.009, limit="serving_bound", share=0.9),
    bound("max_error_above_bound", 0.25, 0.1),
    bound("max_error_above_bound", "Infinity", 0.1),
    {"code": "output_missing", "output": "probabilities"},
    {"code": "shape_mismatch", "output": "y", "shape": [1, 3], "expected_shape": [1, 2], "against": "server_run"},
    {"code": "nonfinite", "output": "y", "count": 1, "against": "fp32"},
    {"code": "integer_mismatch", "output": "label", "count": 2, "against": "server_run"},
    {
        "code": "outside_floor",
        "output": "y",
        "index": [0, 2],
        "expected": 1.0,
        "got": 1.5,
        "max_abs": 0.5,
        "floor_abs": 0.0001,
        "floor_rel": 1e-06,
    },
    {
        "code": "outside_floor",
        "output": "logits",
        "index": [1],
        "expected": 2.0,
        "got": "NaN",
        "max_abs": 0.0,
        "floor_abs": 0.001,
        "floor_rel": None,
    },
    {
        "code": "elementwise_diagnostic",
        "max_abs": 0.5,
        "output": "y",
        "first_outside_floor": {"output": "y", "index": [0, 0], "expected": 1.75, "got": 2.25},
        "needed_abs": 0.5,
    },
    {"code": "elementwise_diagnostic", "max_abs": 0.0, "output": "y", "first_outside_floor": None, "needed_abs": 0.0},
]


def build() -> dict[str, Any]:
    missing = set(CODES) - {r["code"] for r in REASONS}
    if missing:
        raise SystemExit(f"no reason of code {', '.join(sorted(missing))} in {Path(__file__).name}")
    return {"codes": list(CODES), "reasons": [{"reason": r, "python": render(r)} for r in REASONS]}  # type: ignore[arg-type]


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    print(f"wrote {len(data['reasons'])} reasons of {len(data['codes'])} codes to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
