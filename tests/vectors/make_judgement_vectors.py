"""Write tests/vectors/judgement_vectors.json: the shared cases of the one judgement of a result.

Each case states what must come out (ok, basis, the reason's first words in Python); the reason (data: a code
and its numbers, accuracy/reasons.py), the metric and the diagnostic are then written as Python's
accuracy/judgement.py gives them, so the JavaScript twin (web/lib/verification/judgement.js,
tests/js/lib/verification/test_judgement_vectors.mjs) must give the same data; `reason_text` is Python's words
for it (each language renders its own).
tests/accuracy/test_judgement_vectors.py checks the file against both this script's expectations and
the Python rule. Run: .venv/bin/python tests/vectors/make_judgement_vectors.py
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from onnxport.accuracy.judgement import judge
from onnxport.accuracy.reasons import render

OUT = Path(__file__).with_name("judgement_vectors.json")

# The budgets of repository/variants.py and the floors of accuracy/tolerances.py, as the manifest and
# /api/tolerances publish them (written out: the vectors pin the rule, not today's table).
INT8 = {"top1_min": 0.97, "cosine_min": 0.98, "scaled_max_abs": 0.1, "scaled_mean_abs": 0.01, "why": "int8"}
FP16 = {"top1_min": 0.99, "cosine_min": 0.999, "scaled_max_abs": 0.01, "scaled_mean_abs": 0.001, "why": "fp16"}
WASM = {"abs": 0.0001, "rel": 1e-06, "top1_min": 1.0, "cosine_min": 0.99999, "why": "fp32/wasm"}
WEBGPU = {"abs": 0.001, "rel": 1e-05, "top1_min": 1.0, "cosine_min": 0.9999, "why": "fp32/webgpu"}


def t(values, dims=None, dtype="float32") -> dict[str, Any]:
    array = np.asarray(values, dtype=dtype)
    if dims is not None:
        array = array.reshape(dims)
    data = (
        [
            v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
            for v in array.astype(np.float64).ravel().tolist()
        ]
        if dtype.startswith("float")
        else array.ravel().tolist()
    )
    if dtype == "bool":
        data = [int(v) for v in data]
    return {"dtype": dtype, "dims": list(array.shape), "data": data}


def case(
    name,
    task,
    arithmetic,
    *,
    got,
    fp32=None,
    same=None,
    budget=None,
    floor=WASM,
    metric_output="y",
    ok,
    basis,
    prefix=None,
) -> dict[str, Any]:
    return {
        "name": name,
        "task": task,
        "metric_output": metric_output,
        "arithmetic": arithmetic,
        "budget": budget,
        "floor": floor,
        "got": got,
        "fp32": fp32,
        "same_variant": same,
        "ok": ok,
        "basis": basis,
        "reason_prefix": prefix,
    }


def steps(n: int, flips: int, width: int = 3) -> tuple[dict, dict, dict]:
    """[1, n, width] scores: fp32's top class cycles; `got` flips the first `flips` steps and is
    0.4 off the server's int8 at every element."""
    ref = np.zeros((1, n, width), np.float32)
    for i in range(n):
        ref[0, i, i % width] = 1.0
    got = ref.copy()
    for i in range(flips):
        got[0, i, (i + 1) % width] = 2.0
    same = got + np.float32(0.4)
    return t(ref), t(got), t(same)


def cosine_pair(cos: float) -> tuple[list[float], list[float]]:
    return [1.0, 0.0], [1.0, math.sqrt(1 / cos**2 - 1)]


def cases() -> list[dict[str, Any]]:
    fp32_row, got_row = cosine_pair(0.99978)
    low_fp32, low_got = cosine_pair(0.97)
    seq_pass = steps(43, 1)  # 42/43 = 0.977 against 0.97
    seq_fail = steps(20, 1)  # 19/20 = 0.95
    scores = np.linspace(0.0, 1.0, 12, dtype=np.float32).reshape(1, 12)
    boxes = np.linspace(-50.0, 50.0, 8, dtype=np.float32).reshape(1, 2, 4)
    logits4 = [[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 2.0], [0.5, 0.2, 0.1]]
    flipped4 = [[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 2.0], [0.1, 0.2, 0.5]]
    rows50 = np.tile(np.eye(5, dtype=np.float32), (10, 1))
    rows50_flip = rows50.copy()
    rows50_flip[0] = [0, 1, 0, 0, 0]
    return [
        # --- the cases
        case(
            "int8 off by 0.5 element-wise from the server's int8, within budget against fp32: pass, with a diagnostic",
            "classification",
            "int8",
            budget=INT8,
            fp32=t(logits4),
            got=t(np.asarray(logits4) + 0.1),
            same=t(np.asarray(logits4) + 0.6),
            ok=True,
            basis="budget",
        ),
        case(
            "embedding at cosine 0.99978 to fp32, budget 0.98 (WebGPU): pass",
            "embedding",
            "int8",
            budget=INT8,
            floor=WEBGPU,
            fp32=t([fp32_row]),
            got=t([got_row]),
            same=t([fp32_row]),
            ok=True,
            basis="budget",
        ),
        case(
            "fp32 float file off by 1e-3 on wasm: fail by the floor",
            "classification",
            "fp32",
            got=t([[1.001, 0.0]]),
            same=t([[1.0, 0.0]]),
            fp32=t([[1.0, 0.0]]),
            ok=False,
            basis="floor",
            prefix="output 'y' at [0, 0]: expected 1.0, got 1.00",
        ),
        case(
            "already-int8 file named fp32 (arithmetic int8): judged by its budget, 1.34e-2 off is fine",
            "classification",
            "int8",
            budget=INT8,
            fp32=t(logits4),
            got=t(np.asarray(logits4) + 0.0134),
            same=t(logits4),
            ok=True,
            basis="budget",
        ),
        # --- fp32: the floor
        case(
            "fp32 within the wasm floor: pass",
            "classification",
            "fp32",
            got=t([[1.00005, 0.0]]),
            same=t([[1.0, 0.0]]),
            ok=True,
            basis="floor",
        ),
        case(
            "fp32 off by 5e-4 within the WebGPU floor: pass",
            "embedding",
            "fp32",
            floor=WEBGPU,
            got=t([[1.0005, 2.0]]),
            same=t([[1.0, 2.0]]),
            ok=True,
            basis="floor",
        ),
        case(
            "fp32 off by 5e-4 outside the wasm floor: fail",
            "embedding",
            "fp32",
            got=t([[1.0005, 2.0]]),
            same=t([[1.0, 2.0]]),
            ok=False,
            basis="floor",
            prefix="output 'y' at [0, 0]: expected 1.0, got 1.000",
        ),
        case(
            "fp32 near-tie: every element within the floor, the top class flips: fail",
            "classification",
            "fp32",
            got=t([[1.0, 1.00005]]),
            same=t([[1.00005, 1.0]]),
            ok=False,
            basis="floor",
            prefix="top-1 agreement with the server 0.0000 < floor 1.0",
        ),
        case(
            "fp32 integer output differs from the server: fail",
            "classification",
            "fp32",
            got={"y": t([[1.0, 0.0]]), "label": t([1], dtype="int64")},
            same={"y": t([[1.0, 0.0]]), "label": t([0], dtype="int64")},
            ok=False,
            basis="floor",
            prefix="integer output 'label' differs from the server in 1 elements",
        ),
        case(
            "fp32 inf where the server is finite: fail",
            "regression",
            "fp32",
            metric_output=None,
            got=t([1.0, float("inf")]),
            same=t([1.0, 2.0]),
            ok=False,
            basis="floor",
            prefix="output 'y' has 1 inf/NaN values where the server is finite",
        ),
        case(
            "fp32 NaN where the server has NaN: pass",
            "regression",
            "fp32",
            metric_output=None,
            got=t([1.0, float("nan")]),
            same=t([1.0, float("nan")]),
            ok=True,
            basis="floor",
        ),
        case(
            "fp32 shape differs from the server's: fail",
            "classification",
            "fp32",
            got=t([[1.0, 0.0, 0.0]]),
            same=t([[1.0, 0.0]]),
            ok=False,
            basis="floor",
            prefix="output 'y' has shape [1, 3], the server has [1, 2]",
        ),
        case(
            "fp32 output missing: fail",
            "classification",
            "fp32",
            got={"y": t([[1.0, 0.0]])},
            same={"y": t([[1.0, 0.0]]), "z": t([1.0])},
            ok=False,
            basis="floor",
            prefix="output 'z' is missing",
        ),
        # --- fp16 / int8: the budget against fp32
        case(
            "int8 top-1 flipped in 1 of 4 rows: fail by the budget",
            "classification",
            "int8",
            budget=INT8,
            fp32=t(logits4),
            got=t(flipped4),
            same=t(flipped4),
            ok=False,
            basis="budget",
            prefix="top-1 agreement with fp32 0.7500 < budget 0.97",
        ),
        case(
            "fp16 top-1 kept in 49 of 50 rows (0.98 < 0.99): fail",
            "classification",
            "fp16",
            budget=FP16,
            fp32=t(rows50),
            got=t(rows50_flip),
            same=t(rows50_flip),
            ok=False,
            basis="budget",
            prefix="top-1 agreement with fp32 0.9800 < budget 0.99",
        ),
        case(
            "int8 embedding at cosine 0.97 < 0.98: fail",
            "embedding",
            "int8",
            budget=INT8,
            fp32=t([low_fp32]),
            got=t([low_got]),
            same=t([low_got]),
            ok=False,
            basis="budget",
            prefix="min cosine similarity to fp32 0.97000 < budget 0.98",
        ),
        case(
            "int8 sequence: step agreement 0.977 against 0.97, 0.4 off the server's int8: pass",
            "sequence",
            "int8",
            budget=INT8,
            fp32=seq_pass[0],
            got=seq_pass[1],
            same=seq_pass[2],
            ok=True,
            basis="budget",
        ),
        case(
            "int8 sequence: step agreement 0.95 < 0.97: fail",
            "sequence",
            "int8",
            budget=INT8,
            fp32=seq_fail[0],
            got=seq_fail[1],
            same=seq_fail[2],
            ok=False,
            basis="budget",
            prefix="per-step top-1 agreement with fp32 0.9500 < budget 0.97",
        ),
        case(
            "int8 detection map: mean error 9.67e-3 of the range over every float output: pass",
            "detection-map",
            "int8",
            budget=INT8,
            metric_output="scores",
            fp32={"scores": t(scores), "boxes": t(boxes), "count": t([2], dtype="int64")},
            got={"scores": t(scores + np.float32(0.00967)), "boxes": t(boxes), "count": t([3], dtype="int64")},
            same={"scores": t(scores + np.float32(0.5)), "boxes": t(boxes), "count": t([3], dtype="int64")},
            ok=True,
            basis="budget",
        ),
        case(
            "int8 detection map: the boxes' mean error 2e-2 of their range fails though the scores are exact",
            "detection-map",
            "int8",
            budget=INT8,
            metric_output="scores",
            fp32={"scores": t(scores), "boxes": t(boxes)},
            got={"scores": t(scores), "boxes": t(boxes + np.float32(1.0))},
            same={"scores": t(scores), "boxes": t(boxes)},
            ok=False,
            basis="budget",
            prefix="mean error / max |fp32| 0.02 > budget 0.01",
        ),
        case(
            "int8 without a metric output: every output's scaled max error, 0.05 <= 0.1: pass",
            "regression",
            "int8",
            budget=INT8,
            metric_output=None,
            fp32=t([2.0, -4.0]),
            got=t([2.2, -4.0]),
            same=t([2.0, -4.0]),
            ok=True,
            basis="budget",
        ),
        case(
            "int8 without a metric output: scaled max error 0.25 > 0.1: fail",
            "regression",
            "int8",
            budget=INT8,
            metric_output=None,
            fp32=t([2.0, -4.0]),
            got=t([3.0, -4.0]),
            same=t([3.0, -4.0]),
            ok=False,
            basis="budget",
            prefix="max error / max |fp32| 0.25 > budget 0.1",
        ),
        case(
            "fp16 other task with a metric output: scaled max error 5e-3 <= 1e-2: pass",
            "regression",
            "fp16",
            budget=FP16,
            fp32=t([1.0, 2.0]),
            got=t([1.01, 2.0]),
            same=t([1.0, 2.0]),
            ok=True,
            basis="budget",
        ),
        case(
            "int8 NaN where fp32 is finite: fail",
            "classification",
            "int8",
            budget=INT8,
            fp32=t([[1.0, 0.0]]),
            got=t([[float("nan"), 0.0]]),
            same=t([[1.0, 0.0]]),
            ok=False,
            basis="budget",
            prefix="output 'y' has 1 inf/NaN values where fp32 is finite",
        ),
        case(
            "fp16 shape differs from fp32: fail",
            "classification",
            "fp16",
            budget=FP16,
            fp32=t([[1.0, 0.0]]),
            got=t([[1.0, 0.0, 0.0]]),
            same=t([[1.0, 0.0, 0.0]]),
            ok=False,
            basis="budget",
            prefix="output 'y' has shape [1, 3], fp32 has [1, 2]",
        ),
        case(
            "int8 shape differs from the server's run of the same file: fail",
            "classification",
            "int8",
            budget=INT8,
            fp32=t([[1.0, 0.0]]),
            got=t([[1.0, 0.0]]),
            same=t([[1.0, 0.0, 0.0]]),
            ok=False,
            basis="budget",
            prefix="output 'y' has shape [1, 2], the server has [1, 3]",
        ),
        case(
            "int8 output missing: fail",
            "classification",
            "int8",
            budget=INT8,
            fp32={"y": t([[1.0, 0.0]]), "z": t([1.0])},
            got={"y": t([[1.0, 0.0]])},
            same={"y": t([[1.0, 0.0]]), "z": t([1.0])},
            ok=False,
            basis="budget",
            prefix="output 'z' is missing",
        ),
        case(
            "int8 integer output differs from fp32: not judged, the budget's metric is",
            "classification",
            "int8",
            budget=INT8,
            fp32={"y": t([[1.0, 0.0]]), "label": t([0], dtype="int64")},
            got={"y": t([[0.9, 0.0]]), "label": t([1], dtype="int64")},
            same={"y": t([[1.0, 0.0]]), "label": t([1], dtype="int64")},
            ok=True,
            basis="budget",
        ),
        case(
            "int8 with no server output of the same file: judged, no diagnostic",
            "classification",
            "int8",
            budget=INT8,
            fp32=t(logits4),
            got=t(logits4),
            same=None,
            ok=True,
            basis="budget",
        ),
    ]


def _named(value):
    """A bare tensor is the output `y`."""
    if value is None or "dtype" not in value:
        return value
    return {"y": value}


def decode(outputs: dict | None) -> dict[str, np.ndarray] | None:
    if outputs is None:
        return None
    special = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
    return {
        name: np.array(
            [special.get(v, v) if isinstance(v, str) else v for v in spec["data"]], dtype=spec["dtype"]
        ).reshape(spec["dims"])
        for name, spec in outputs.items()
    }


def run(vector: dict[str, Any]) -> dict[str, Any]:
    return judge(
        vector["task"],
        vector["metric_output"],
        vector["arithmetic"],
        vector["budget"],
        vector["floor"],
        decode(vector["got"]),
        decode(vector["fp32"]),
        decode(vector["same_variant"]),
    )


def build() -> list[dict[str, Any]]:
    vectors = []
    for spec in cases():
        vector = {**spec, **{k: _named(spec[k]) for k in ("got", "fp32", "same_variant")}}
        result = run(vector)
        text = render(result["reason"]) if result["reason"] else None
        if (result["ok"], result["basis"]) != (vector["ok"], vector["basis"]) or (
            vector["reason_prefix"] and not (text or "").startswith(vector["reason_prefix"])
        ):
            raise SystemExit(
                f"case {vector['name']!r}: wanted ok={vector['ok']} basis={vector['basis']} "
                f"reason {vector['reason_prefix']!r}..., the rule says {result['ok']} {result['basis']} {text!r}"
            )
        vector["reason"] = result["reason"]
        vector["reason_text"] = text
        vector["metric"] = result["metric"]
        diagnostic = result["diagnostic"]
        vector["diagnostic"] = {k: v for k, v in diagnostic.items() if k != "text"} if diagnostic else None
        vector["diagnostic_max_abs"] = diagnostic["max_abs"] if diagnostic else None
        vectors.append(vector)
    return vectors


def main() -> None:
    text = "[\n" + ",\n".join(json.dumps(v, allow_nan=False) for v in build()) + "\n]\n"
    OUT.write_text(text)
    print(f"wrote {len(text.splitlines()) - 2} vectors to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
