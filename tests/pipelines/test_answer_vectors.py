"""Python's answer steps (server/onnxport/pipelines/answers.py) on the shared cases (tests/vectors/answer_vectors.json):
every op, chains of them, a mean pool over a padded batch, CTC. tests/js/lib/pipelines/test_answer_vectors.mjs runs
web/lib/pipelines/answers.js on the same cases and holds it to the answers written here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fixtures import vectors
from onnxport.pipelines import answers

VECTORS = vectors.read("answer_vectors")
MAKE = vectors.generator("answer_vectors")


def assert_same_answers(got: list, want: list, label: str) -> None:
    assert len(got) == len(want), label
    for g, w in zip(got, want):
        if isinstance(w, list) and w and isinstance(w[0], dict):
            assert [a["label"] for a in g] == [a["label"] for a in w], label
            np.testing.assert_allclose([a["score"] for a in g], [a["score"] for a in w], rtol=1e-6, err_msg=label)
        elif isinstance(w, dict):
            assert g["label"] == w["label"] and g["score"] == pytest.approx(w["score"], rel=1e-6), label
        elif isinstance(w, str):
            assert g == w, label
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=label)


def test_the_vector_file_holds_every_case_and_pythons_answers_now():
    now = vectors.rebuilt("answer_vectors")
    cases = [(v["spec"], v["output"], v["feeds"]) for v in VECTORS]
    assert cases == [(v["spec"], v["output"], v["feeds"]) for v in now], "run tests/vectors/make_answer_vectors.py"
    assert {step["op"] for v in VECTORS for step in v["spec"]["steps"]} == {
        "softmax",
        "top_k",
        "sigmoid",
        "argmax",
        "normalize",
        "mean_pool",
        "ctc",
    }
    for written, python in zip(VECTORS, now):
        assert_same_answers(written["answers"], python["answers"], json.dumps(written["spec"]["steps"]))


def test_the_mean_pool_leaves_padding_out():
    [short, full] = answers.answers(
        {"output": "o", "steps": [{"op": "mean_pool", "mask": "mask"}]}, MAKE.HIDDEN, {"mask": MAKE.MASK}
    )
    np.testing.assert_allclose(short, MAKE.HIDDEN[0, :3].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(full, MAKE.HIDDEN[1].mean(axis=0), rtol=1e-6)
    assert answers.answers(
        {"output": "o", "steps": [{"op": "softmax"}, {"op": "ctc", "vocabulary": list("_abc")}]}, MAKE.STEPS
    ) == ["abc"]
