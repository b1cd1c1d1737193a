"""Requests built to cost the server far more than their size (issue: raw input is untrusted). Each attack is sent
as an outsider would, to a real `onnxport serve` where memory counts, and must get a 4xx that names what was too
much, before the work: the server's memory settles back, and it answers the next request."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fixtures.servers import buffered_client, free_port, start_test_server
from onnxport.serving.app import create_app

IRIS_ROW = {"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def post(
    base_url: str,
    path: str,
    body: bytes | str,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict, float]:
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    started = time.perf_counter()
    connection.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    return response.status, answer, time.perf_counter() - started


@pytest.fixture(scope="module")
def demo_server(demo_repository, tmp_path_factory):
    """A real server on the demo repository with minilm (text) and digits (image) loaded: its pid for memory."""
    port = free_port()
    server = start_test_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)],
        port,
        tmp_path_factory.mktemp("untrusted") / "server.log",
        env={"ONNXPORT_REQUEST_LOG": "off"},
    )
    for model, inputs in (
        ("minilm", [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["warm up"]}]),
        ("iris", [IRIS_ROW]),
    ):
        status, body, _ = post(server.base_url, f"/v2/models/{model}/infer", json.dumps({"inputs": inputs}))
        assert status == 200, body
    yield server
    server.stop()


def test_300000_empty_inputs_are_refused_while_parsing(demo_server):
    # Before: a 400 after pydantic described each element (~2.9 KB of RSS each: 866 MB for these 0.9 MB).
    pid = demo_server.process.pid
    before = rss_mb(pid)
    status, body, seconds = post(demo_server.base_url, "/v2/models/iris/infer", json.dumps({"inputs": [{}] * 300_000}))
    after = rss_mb(pid)
    print(f"\n[{{}}] x 300000: {status} in {seconds:.2f} s, RSS {before:.0f} -> {after:.0f} MB")
    assert status == 400 and "JSON objects" in body["error"], body
    assert after - before < 50, f"RSS grew {after - before:.0f} MB"


def test_more_inputs_than_the_model_has_are_refused_before_validation(demo_server):
    inputs = [{**IRIS_ROW, "name": f"x{index}"} for index in range(5_000)]
    status, body, _ = post(demo_server.base_url, "/v2/models/iris/infer", json.dumps({"inputs": inputs}))
    # The JSON's cost stops it first: the keys of 5,000 inputs are far past what a request for iris can hold.
    assert status == 400 and "JSON keys" in body["error"] and "'iris' (1 input, 2 outputs)" in body["error"], body


def test_100000_short_texts_are_refused_by_the_row_budget(demo_server):
    # Before: 324 s, and 14.7 GB kept by onnxruntime's arena afterwards (a 500 on a smaller machine).
    pid = demo_server.process.pid
    before = rss_mb(pid)
    texts = ["hi there"] * 100_000
    status, body, seconds = post(
        demo_server.base_url,
        "/v2/models/minilm/infer",
        json.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [len(texts)], "data": texts}]}),
    )
    after = rss_mb(pid)
    print(f"\n100,000 texts: {status} in {seconds:.2f} s, RSS {before:.0f} -> {after:.0f} MB")
    assert status == 413 and "raw_max_rows" in body["error"] and "100,000 rows" in body["error"], body
    assert after - before < 100, f"RSS grew {after - before:.0f} MB"


def test_a_10_mb_text_is_cut_to_what_the_tokenizer_keeps(demo_server):
    # Before: 16-23 s, tokenized in full for its first 128 tokens.
    text = ("lorem ipsum dolor sit amet, " * 400_000)[:10_000_000]

    def embedding(sent: str) -> tuple[np.ndarray, float]:
        status, body, seconds = post(
            demo_server.base_url,
            "/v2/models/minilm/infer",
            json.dumps(
                {
                    "inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": [sent]}],
                    "outputs": [{"name": "answer"}],
                }
            ),
        )
        assert status == 200, body
        return np.array(json.loads(body["outputs"][0]["data"][0])), seconds

    whole, seconds = embedding(text)
    head, _ = embedding(text[:5_000])  # the same first 128 tokens
    print(f"\none 10 MB text: answered in {seconds:.2f} s")
    assert seconds < 5, f"{seconds:.1f} s"
    np.testing.assert_array_equal(whole, head)


def test_a_pixel_budget_in_the_settings_refuses_a_large_image(demo_repository, tmp_path):
    import base64
    import io

    from PIL import Image

    data = io.BytesIO()
    Image.new("RGB", (300, 200), "white").save(data, "PNG")
    app = create_app({"repository": demo_repository, "raw_max_image_pixels": 50_000})
    response = buffered_client(app).post(
        "/v2/models/digits/infer",
        json={
            "inputs": [
                {
                    "name": "image",
                    "datatype": "BYTES",
                    "shape": [1],
                    "data": [base64.b64encode(data.getvalue()).decode()],
                }
            ]
        },
    )
    assert response.status_code == 413, response.get_json()
    assert "300x200" in response.get_json()["error"] and "raw_max_image_pixels" in response.get_json()["error"]


@pytest.mark.parametrize(("model", "name"), [("minilm", "text"), ("digits", "image")])
def test_raw_input_with_no_rows_is_a_400(demo_app, model, name):
    response = buffered_client(demo_app).post(
        f"/v2/models/{model}/infer", json={"inputs": [{"name": name, "datatype": "BYTES", "shape": [0], "data": []}]}
    )
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == f"input {name!r}: shape [0] holds no {name}; send at least one row"


def tile_model() -> onnx.ModelProto:
    """y = x repeated `reps` times: how much memory a run takes is the client's to say."""
    graph = helper.make_graph(
        [helper.make_node("Tile", ["x", "reps"], ["y"])],
        "tile",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
            helper.make_tensor_value_info("reps", TensorProto.INT64, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_run_onnxruntime_cannot_allocate_is_a_413_and_the_server_goes_on(tmp_path, run_cli):
    # zeros of the shape the client sends: how much memory the run takes is the client's to say
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["zeros"])],
        "zeros",
        [helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("zeros", TensorProto.FLOAT, ["rows", "columns"])],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), tmp_path / "zeros.onnx"
    )
    np.savez(tmp_path / "data.npz", shape=np.array([2, 3], np.int64))
    repository = tmp_path / "repository"
    code, _, err = run_cli(
        "--repository",
        repository,
        "import",
        tmp_path / "zeros.onnx",
        "--name",
        "zeros",
        "--inputs",
        tmp_path / "data.npz",
        "--forms",
        "none",
        "--quiet",
    )
    assert code == 0, err
    client = buffered_client(create_app({"repository": repository, "request_log": "off"}))

    def zeros(rows: int, columns: int):
        return client.post(
            "/v2/models/zeros/infer",
            json={"inputs": [{"name": "shape", "shape": [2], "datatype": "INT64", "data": [rows, columns]}]},
        )

    response = zeros(100_000, 10**8)  # 40 TB of floats
    assert response.status_code == 413, response.get_json()
    assert "Failed to allocate memory" in response.get_json()["error"], response.get_json()
    assert "send fewer rows" in response.get_json()["error"]
    assert zeros(1, 3).get_json()["outputs"][0]["data"] == [0.0, 0.0, 0.0]


@pytest.fixture
def tiny_client(tmp_path, imported_repository):
    def app(**settings):
        return buffered_client(
            create_app({"repository": imported_repository(tile_model(), "tile"), "request_log": "off", **settings})
        )

    return app


TILE_REQUEST = {
    "inputs": [
        {"name": "x", "shape": [1], "datatype": "FP32", "data": [2.0]},
        {"name": "reps", "shape": [1], "datatype": "INT64", "data": [2]},
    ]
}


def test_a_page_of_another_origin_cannot_make_the_server_work(tiny_client):
    client = tiny_client()
    # No Content-Type: a cross-origin fetch() may send this without a preflight.
    response = client.post(
        "/v2/models/tile/infer",
        data=json.dumps(TILE_REQUEST),
        headers={"Origin": "https://evil.example", "Content-Type": ""},
    )
    assert response.status_code == 403, response.get_json()
    assert response.get_json()["error"].startswith(
        "origin https://evil.example may not send requests to this server"
    ), response.get_json()
    statistics = client.get("/v2/models/tile/stats").get_json()
    assert statistics["model_stats"][0]["inference_count"] == 0, "the refused request ran"
    # The server's own pages (Origin = its host) and clients without Origin are served.
    same = client.post("/v2/models/tile/infer", json=TILE_REQUEST, headers={"Origin": "http://localhost"})
    assert same.status_code == 200, same.get_json()
    assert client.post("/v2/models/tile/infer", data=json.dumps(TILE_REQUEST)).status_code == 200


def test_an_origin_in_cors_origins_may_send(tiny_client):
    client = tiny_client(cors_origins=["https://app.example"])
    response = client.post("/v2/models/tile/infer", json=TILE_REQUEST, headers={"Origin": "https://app.example"})
    assert response.status_code == 200, response.get_json()
    refused = client.post("/v2/models/tile/infer", json=TILE_REQUEST, headers={"Origin": "https://other.example"})
    assert refused.status_code == 403 and "https://app.example" in refused.get_json()["error"]


def test_a_form_body_is_refused_with_the_curl_fix(tiny_client):
    response = tiny_client().post(
        "/v2/models/tile/infer", data=json.dumps(TILE_REQUEST), content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415, response.get_json()
    assert "-H 'Content-Type: application/json'" in response.get_json()["error"]


def test_the_repository_api_refuses_a_foreign_origin_before_the_token(tiny_client):
    client = tiny_client(admin_token="s3cret")
    response = client.post(
        "/v2/repository/models/tile/unload",
        headers={"Origin": "https://evil.example", "Authorization": "Bearer s3cret"},
    )
    assert response.status_code == 403 and "evil.example" in response.get_json()["error"], response.get_json()
    assert client.post("/v2/models/tile/infer", json=TILE_REQUEST).status_code == 200  # still loaded
