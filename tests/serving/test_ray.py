"""`onnxport serve --engine ray`: the V2 API on a real local Ray cluster with 2 replicas (serving/ray_engine.py).

The same checks as the waitress server: tritonclient on every served variant (binary and JSON) equal to
a local onnxruntime session, the same errors for the same bad requests (one implementation,
v2_core.py), both replicas answering, and no Ray process left once the server stops.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from demo_variants import MODEL_VARIANTS
from fixtures.servers import free_port, start_test_server

pytestmark = pytest.mark.slow

BAD_REQUESTS = [
    {"inputs": []},
    {"inputs": [{"name": "features", "shape": [1, 4], "datatype": ["FP32"], "data": [1, 2, 3, 4]}]},
    {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [[1], [2], [3], [4]]}]},
    {"id": 1.5, "inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
    {"inputs": [{"name": "sepal", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
]


def ray_processes() -> list[str]:
    found = subprocess.run(["pgrep", "-fa", "onnxport-ray-"], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if "pgrep" not in line]


@pytest.fixture(scope="module")
def ray_server(demo_repository, tmp_path_factory):
    port = free_port()
    started = time.perf_counter()
    server = start_test_server(["serve", "--engine", "ray", "--replicas", "2", "--repository", str(demo_repository),
                                "--port", str(port)], port, tmp_path_factory.mktemp("ray") / "server.log", timeout=240)
    print(f"\nRay cluster and 2 replicas ready in {time.perf_counter() - started:.1f} s")
    assert ray_processes(), "no process of the local Ray cluster found"
    yield server
    server.stop(timeout=60)
    deadline = time.time() + 30
    while ray_processes() and time.time() < deadline:
        time.sleep(0.5)
    assert not ray_processes(), "Ray processes left after the server stopped"


def post(base_url: str, path: str, body: dict) -> tuple[int, object, dict]:
    request = urllib.request.Request(base_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_tritonclient_on_every_served_variant(ray_server, golden_inputs, reference_outputs, binary):
    import tritonclient.http as httpclient

    triton = httpclient.InferenceServerClient(ray_server.base_url.removeprefix("http://"))
    try:
        for model, variant in MODEL_VARIANTS:
            feeds = golden_inputs(model)
            inputs = []
            for name, value in feeds.items():
                tensor = httpclient.InferInput(name, list(value.shape), httpclient.np_to_triton_dtype(value.dtype))
                tensor.set_data_from_numpy(value, binary_data=binary)
                inputs.append(tensor)
            expected = reference_outputs(model, variant, feeds)
            outputs = [httpclient.InferRequestedOutput(name, binary_data=binary) for name in expected]
            result = triton.infer(model, inputs, model_version=variant, outputs=outputs)
            for name, value in expected.items():
                np.testing.assert_array_equal(result.as_numpy(name), value, err_msg=f"{model} {variant} {name}")
    finally:
        triton.close()


def test_both_replicas_answer(ray_server):
    body = {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.9, 3.0, 5.1, 1.8]}]}
    replicas = {post(ray_server.base_url, "/v2/models/iris/infer", body)[1].get("X-Onnxport-Replica") for _ in range(40)}
    assert len(replicas) == 2, replicas


@pytest.mark.parametrize("body", BAD_REQUESTS)
def test_the_same_errors_as_the_flask_server(ray_server, demo_app, body):
    status, headers, error = post(ray_server.base_url, "/v2/models/iris/infer", body)
    flask = demo_app.test_client().post("/v2/models/iris/infer", data=json.dumps(body), content_type="application/json")
    assert (status, error) == (flask.status_code, flask.json)
    assert 400 <= status < 500 and list(error) == ["error"] and headers.get("Content-Type") == "application/json"
