"""The fp32 floor of the one judgement: the table's floor loosened to the model's export tolerance.

The same vectors (tests/vectors/fp32_floor_vectors.json) hold web/lib/verification/judgement.js fp32Floor
(tests/js/lib/verification/test_fp32_floor.mjs); the serving budget leaves room under the budget it is judged by.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onnxport.accuracy import budgets, judgement

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "fp32_floor_vectors.json").read_text())


@pytest.mark.parametrize("case", VECTORS, ids=[c["name"] for c in VECTORS])
def test_fp32_floor(case):
    assert judgement.fp32_floor(case["table"], case["validation"]) == case["floor"]


def test_a_box_coordinate_of_two_fp32_builds_passes_the_floor_of_an_import():
    # nudenet-320n, corpus: 120.69709777832031 natively, 120.69697570800781 in WebAssembly (2.4e-4 apart).
    table = {"abs": 1e-4, "rel": 1e-6, "top1_min": 1.0, "cosine_min": 0.99999}
    got, want = {"y": [120.69697570800781]}, {"y": [120.69709777832031]}
    import numpy as np

    got, want = ({k: np.array(v, dtype=np.float32) for k, v in d.items()} for d in (got, want))
    strict = judgement.judge("detection-map", "y", "fp32", None, table, got, None, want)
    loosened = judgement.judge(
        "detection-map",
        "y",
        "fp32",
        None,
        judgement.fp32_floor(table, {"tolerance": {"abs": 1e-5, "rel": 1e-3}}),
        got,
        None,
        want,
    )
    assert not strict["ok"] and loosened["ok"], (strict["reason"], loosened["reason"])


@pytest.mark.parametrize("arithmetic", ["fp16", "int8"])
def test_the_serving_budget_leaves_headroom_under_the_budget(arithmetic):
    full, serving = budgets.budget(arithmetic), budgets.serving_budget(arithmetic)
    keep = 1 - budgets.SERVING_HEADROOM
    assert serving.scaled_mean_abs == pytest.approx(keep * full.scaled_mean_abs)
    assert serving.scaled_max_abs == pytest.approx(keep * full.scaled_max_abs)
    assert 1 - serving.top1_min == pytest.approx(keep * (1 - full.top1_min))
    assert 1 - serving.cosine_min == pytest.approx(keep * (1 - full.cosine_min))
    # ddddocr-common-det's int8-dynamic: 0.0097 natively was served at the budget's edge; WebAssembly's
    # int8 gave 0.0103 on the same inputs.
    edge = {"scaled_mean_abs": 0.97 * full.scaled_mean_abs}
    assert budgets.check(full, "detection-map", edge) is None
    assert "serving bound" in budgets.check(serving, "detection-map", edge, bound=budgets.SERVING_BOUND)


def test_fp32_is_served_within_its_budget():
    assert budgets.serving_budget("fp32") == budgets.budget("fp32")
