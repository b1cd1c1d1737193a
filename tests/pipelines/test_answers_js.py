"""The browser library's answer steps (web/lib/pipelines/answers.js, run by node) against Python's (server/onnxport/
pipelines/answers.py) on the same outputs: every op, chains of them, a mean pool over a padded batch, CTC."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from onnxport.pipelines import answers
from onnxport.project import PROJECT_ROOT

SCRIPT = """
import { readFileSync } from "node:fs";
import { answers } from "%(lib)s";
const cases = JSON.parse(readFileSync(0, "utf8"));
const tensor = ({ dims, data, type }) => ({ type, dims, data: type === "int64" ? BigInt64Array.from(data.map(BigInt))
  : Float32Array.from(data) });
process.stdout.write(JSON.stringify(cases.map(({ spec, output, feeds }) =>
  answers(spec, tensor(output), Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, tensor(t)]))))));
"""

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


def encoded(value: np.ndarray) -> dict:
    return {
        "dims": list(value.shape),
        "data": value.reshape(-1).tolist(),
        "type": "int64" if value.dtype.kind == "i" else "float32",
    }


def test_every_answer_step_gives_pythons_answer():
    script = SCRIPT % {"lib": (PROJECT_ROOT / "web/lib/pipelines/answers.js").as_uri()}
    cases = [
        {"spec": spec, "output": encoded(output), "feeds": {k: encoded(v) for k, v in feeds.items()}}
        for spec, output, feeds in CASES
    ]
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for (spec, output, feeds), got in zip(CASES, json.loads(done.stdout)):
        want = answers.answers(spec, output, feeds)
        label = json.dumps(spec["steps"])
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


def test_the_mean_pool_leaves_padding_out():
    [short, full] = answers.answers(
        {"output": "o", "steps": [{"op": "mean_pool", "mask": "mask"}]}, HIDDEN, {"mask": MASK}
    )
    np.testing.assert_allclose(short, HIDDEN[0, :3].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(full, HIDDEN[1].mean(axis=0), rtol=1e-6)
    assert answers.answers(
        {"output": "o", "steps": [{"op": "softmax"}, {"op": "ctc", "vocabulary": list("_abc")}]}, STEPS
    ) == ["abc"]
