"""Raw image input is untrusted (issue 30), through the real HTTP path: create_app on a repository holding a
small imported model with the digits' image pipeline, driven by Flask's test client. An EPS (which Pillow would
hand to Ghostscript) is a 400 within a second and starts no program; crafted and mutated image files, alone and in
batches, JSON and binary, never give a 5xx. tests/pipelines/test_image_untrusted.py holds the pipeline's side."""

from __future__ import annotations

import base64
import json
import os
import struct
import time
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from PIL import EpsImagePlugin

from fixtures import image_attacks
from fixtures.servers import buffered_client
from onnxport import cli
from onnxport.serving.app import create_app

# The digits model's pipeline (models/digits.py): grey, 8x8 by box filter, inverted, NCHW; the three likeliest.
PIPELINE = {
    "image": {
        "input": "pixels",
        "mode": "L",
        "resize": {"width": 8, "height": 8, "filter": "box"},
        "crop": None,
        "invert": True,
        "scale": 1.0,
        "mean": [0.0],
        "std": [1.0],
        "layout": "NCHW",
        "dtype": "float32",
    },
    "answer": {
        "output": "logits",
        "steps": [{"op": "softmax"}, {"op": "top_k", "k": 3, "labels": [str(d) for d in range(10)]}],
    },
}


def ink_model() -> onnx.ModelProto:
    """pixels [batch, 1, 8, 8] -> logits [batch, 10]: a fixed linear map, so every decoded image has an answer."""
    weights = np.random.default_rng(30).normal(size=(64, 10)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Flatten", ["pixels"], ["flat"], axis=1),
            helper.make_node("MatMul", ["flat", "w"], ["logits"]),
        ],
        "ink",
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["batch", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        [helper.make_tensor("w", TensorProto.FLOAT, [64, 10], weights.reshape(-1).tolist())],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ink")
    onnx.save(ink_model(), folder / "ink.onnx")
    (folder / "pipeline.json").write_text(json.dumps(PIPELINE))
    code = cli.main(
        [
            "--repository",
            str(folder / "repository"),
            "import",
            str(folder / "ink.onnx"),
            "--name",
            "ink",
            "--quiet",
            "--forms",
            "none",
            "--pipeline",
            str(folder / "pipeline.json"),
        ]
    )
    assert code == 0
    return buffered_client(create_app({"repository": folder / "repository"}))


def json_request(client, files: list[bytes]):
    return client.post(
        "/v2/models/ink/infer",
        json={
            "inputs": [
                {
                    "name": "image",
                    "datatype": "BYTES",
                    "shape": [len(files)],
                    "data": [base64.b64encode(f).decode() for f in files],
                }
            ]
        },
    )


def binary_request(client, files: list[bytes]):
    """The binary tensor extension, as tritonclient sends BYTES: each element a 4-byte little-endian length
    and its bytes."""
    raw = b"".join(struct.pack("<I", len(f)) + f for f in files)
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "image",
                    "datatype": "BYTES",
                    "shape": [len(files)],
                    "parameters": {"binary_data_size": len(raw)},
                }
            ]
        }
    ).encode()
    return client.post(
        "/v2/models/ink/infer",
        data=header + raw,
        headers={"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(header))},
    )


def test_a_valid_image_is_answered(client):
    files = list(image_attacks.seeds().values())
    for send in (json_request, binary_request):
        response = send(client, files)
        assert response.status_code == 200, response.get_json()
        answers = next(o for o in response.get_json()["outputs"] if o["name"] == "answer")
        assert answers["shape"] == [len(files)] and len(json.loads(answers["data"][0])) == 3


@pytest.mark.parametrize("name", ["EPS_LOOP", "EPS_MALFORMED"])
def test_an_eps_is_a_400_within_a_second_and_starts_no_program(client, assert_json_error, tmp_path, monkeypatch, name):
    folder, marker = image_attacks.fake_ghostscript(tmp_path / "bin")  # a `gs` that marks and sleeps
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.setattr(EpsImagePlugin, "gs_binary", None)
    start = time.perf_counter()
    response = json_request(client, [getattr(image_attacks, name)])
    seconds = time.perf_counter() - start
    print(f"{name}: HTTP {response.status_code} in {seconds * 1000:.1f} ms")
    assert_json_error(response, 400, "input 'image' row 0: not an image of an accepted format", "EPS")
    assert seconds < 1, f"{seconds:.2f} s"
    assert not marker.exists(), f"`gs` was started: {marker.read_text()}"


def test_crafted_files_are_4xx_that_say_why(client, assert_json_error):
    assert_json_error(json_request(client, [image_attacks.tall_tiff()]), 400, "row 0", "it looks like TIFF")
    start = time.perf_counter()
    response = binary_request(client, [image_attacks.seeds()["PNG RGB"], image_attacks.png_bomb(6300)])
    seconds = time.perf_counter() - start
    print(f"6300x6300 PNG bomb: HTTP {response.status_code} in {seconds * 1000:.1f} ms")
    assert response.status_code in (400, 413)
    assert "row 1" in response.get_json()["error"] and "6300x6300" in response.get_json()["error"]
    assert_json_error(json_request(client, [image_attacks.jpeg_scan_bomb(1000)]), 400, "row 0", "1,006 scans")


def test_a_mutated_corpus_gives_no_5xx(client):
    files = image_attacks.mutated(1200)
    statuses: Counter[int] = Counter()
    server_errors = []
    start = time.perf_counter()
    requests = [(json_request, [f]) for f in files]  # every file reaches the decoder alone
    requests += [(binary_request, files[i : i + 16]) for i in range(0, len(files), 16)]  # and in batches
    for send, batch in requests:
        response = send(client, [data for _, data in batch])
        statuses[response.status_code] += 1
        body = response.get_json()
        if response.status_code >= 500 or body is None or (response.status_code != 200 and "error" not in body):
            labels = [label for label, _ in batch]
            server_errors.append(f"{labels}: HTTP {response.status_code} {response.data[:300]!r}")
    print(
        f"{len(files)} mutated files, {len(requests)} requests in {time.perf_counter() - start:.1f} s: {dict(statuses)}"
    )
    assert not server_errors, f"{len(server_errors)} answers were not a result or a JSON 4xx: {server_errors[:3]}"
    assert statuses[200] > 100, f"only {statuses[200]} answers: the corpus hardly reaches the model"
