"""A real `onnxport serve` (waitress, in a subprocess): tritonclient.http with its defaults, plain
JSON over urllib, concurrent clients, and raw paths as a socket sends them."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np
import pytest

from demo_variants import MODEL_VARIANTS, MODELS


@dataclass
class Reply:
    status_code: int
    headers: object  # http.client.HTTPMessage: .get(name)
    data: bytes


def http_request(
    base_url: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """One request through urllib, any status returned rather than raised."""
    request = urllib.request.Request(base_url + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return Reply(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        with error:
            return Reply(error.code, error.headers, error.read())


def raw_request(base_url: str, raw_path: str) -> Reply:
    """GET with the path sent byte for byte (no client-side normalisation)."""
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("GET", raw_path)
        response = connection.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        connection.close()


def assert_outputs_equal(actual: dict, expected: dict) -> None:
    assert sorted(actual) == sorted(expected)
    for name, value in expected.items():
        assert actual[name].dtype == value.dtype, name
        # Exact: the server's session and the reference have the same artifact, inputs and
        # thread settings (intra-op 0, inter-op 1).
        np.testing.assert_array_equal(actual[name], value, err_msg=name)


@pytest.fixture(scope="module")
def triton(live_server):
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(url=urlsplit(live_server).netloc)
    yield client
    client.close()


# --------------------------------------------------------------------------- tritonclient


def test_tritonclient_health(triton):
    assert triton.is_server_live()
    assert triton.is_server_ready()
    for model in MODELS:
        assert triton.is_model_ready(model)
        assert triton.is_model_ready(model, "fp16")
    assert triton.is_model_ready("digits", "int8-static")
    assert not triton.is_model_ready("iris", "int8-static")  # skipped: not smaller than fp32
    assert not triton.is_model_ready("nope")


def test_tritonclient_server_metadata(triton):
    metadata = triton.get_server_metadata()
    assert metadata["name"] == "onnxport"
    assert "binary_tensor_data" in metadata["extensions"]


@pytest.mark.parametrize("model", MODELS)
def test_tritonclient_model_metadata(triton, demo_manifest, model):
    metadata = triton.get_model_metadata(model)
    entry = demo_manifest["models"][model]
    assert metadata["name"] == model
    assert metadata["platform"] == "onnx_onnxv1"
    assert metadata["versions"][0] == "fp32"
    assert [i["name"] for i in metadata["inputs"]] == [i["name"] for i in entry["inputs"]]
    assert [o["name"] for o in metadata["outputs"]] == [o["name"] for o in entry["outputs"]]
    assert metadata["inputs"][0]["shape"][0] == -1  # the batch dimension is dynamic
    assert triton.get_model_metadata(model, "fp16")["versions"] == ["fp16"]


@pytest.mark.parametrize("model, variant", MODEL_VARIANTS)
def test_tritonclient_infer(triton, served, golden_inputs, reference_outputs, model, variant):
    import tritonclient.http as httpclient

    served(model, variant)
    feeds = golden_inputs(model)
    inputs = []
    for name, value in feeds.items():
        tensor = httpclient.InferInput(name, list(value.shape), httpclient.np_to_triton_dtype(value.dtype))
        tensor.set_data_from_numpy(value)  # binary_data=True: the client's default
        inputs.append(tensor)
    result = triton.infer(model, inputs, model_version=variant)
    response = result.get_response()
    assert response["model_name"] == model and response["model_version"] == variant
    assert all("binary_data_size" in o["parameters"] for o in response["outputs"])  # the default: binary out
    expected = reference_outputs(model, variant, feeds)
    assert_outputs_equal({name: result.as_numpy(name) for name in expected}, expected)


def test_tritonclient_json_tensors_and_one_output(triton, golden_inputs, reference_outputs):
    import tritonclient.http as httpclient

    feeds = golden_inputs("iris")
    tensor = httpclient.InferInput("features", list(feeds["features"].shape), "FP32")
    tensor.set_data_from_numpy(feeds["features"], binary_data=False)
    output = httpclient.InferRequestedOutput("probabilities", binary_data=False)
    result = triton.infer("iris", [tensor], model_version="fp16", outputs=[output], request_id="abc")
    response = result.get_response()
    assert response["id"] == "abc"
    assert [o["name"] for o in response["outputs"]] == ["probabilities"]
    np.testing.assert_array_equal(
        result.as_numpy("probabilities"), reference_outputs("iris", "fp16", feeds)["probabilities"]
    )


def test_tritonclient_errors(triton):
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    tensor = httpclient.InferInput("features", [1, 4], "FP32")
    tensor.set_data_from_numpy(np.zeros((1, 4), np.float32))
    with pytest.raises(InferenceServerException) as raised:
        triton.infer("resnet", [tensor])
    assert str(raised.value.status()) == "404" and "resnet" in raised.value.message()

    wrong = httpclient.InferInput("features", [1, 4], "FP64")
    wrong.set_data_from_numpy(np.zeros((1, 4), np.float64))
    with pytest.raises(InferenceServerException) as raised:
        triton.infer("iris", [wrong])
    assert str(raised.value.status()) == "400" and "FP32" in raised.value.message()


# --------------------------------------------------------------------------- plain JSON (curl-style)


@pytest.mark.parametrize("model, variant", MODEL_VARIANTS)
def test_json_post(live_server, served, golden_inputs, reference_outputs, v2_codec, model, variant):
    served(model, variant)
    feeds = golden_inputs(model)
    reply = http_request(
        live_server,
        "POST",
        f"/v2/models/{model}/versions/{variant}/infer",
        v2_codec.json_request(feeds, request_id=f"{model}-{variant}"),
        {"Content-Type": "application/json"},
    )
    assert reply.status_code == 200, reply.data[:500]
    assert reply.headers.get("Content-Type").startswith("application/json")
    header, outputs = v2_codec.parse_response(reply.data, None)
    assert header["id"] == f"{model}-{variant}"
    assert_outputs_equal(outputs, reference_outputs(model, variant, feeds))


def test_the_readmes_curl_example(live_server):
    # `curl -H 'Content-Type: application/json' -d '{...}'`: the README's example.
    body = (
        b'{"id": "1", "inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", '
        b'"data": [5.1, 3.5, 1.4, 0.2]}]}'
    )
    reply = http_request(live_server, "POST", "/v2/models/iris/infer", body, {"Content-Type": "application/json"})
    assert reply.status_code == 200
    assert json.loads(reply.data)["outputs"][0]["data"] == [0]


def test_unknown_model_is_a_json_404(live_server, assert_json_error):
    reply = http_request(
        live_server,
        "POST",
        "/v2/models/resnet/infer",
        b'{"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]}',
        {"Content-Type": "application/json"},
    )
    assert_json_error(reply, 404, "unknown model 'resnet'", "iris")


def test_bad_request_through_the_live_server_is_a_json_400(live_server, assert_json_error):
    reply = http_request(
        live_server, "POST", "/v2/models/iris/infer", b"{not json", {"Content-Type": "application/json"}
    )
    assert_json_error(reply, 400, "not valid JSON")


# --------------------------------------------------------------------------- concurrency

THREADS, PER_THREAD = 16, 10


def concurrency_requests(golden_inputs) -> list[tuple[str, str, str, dict]]:
    """THREADS * PER_THREAD (model, variant, json|binary, feeds): every served model and variant in each
    mode, 1-3 rows."""
    specs = []
    for i in range(THREADS * PER_THREAD):
        model, variant = MODEL_VARIANTS[i % len(MODEL_VARIANTS)]
        mode = "json" if (i // len(MODEL_VARIANTS)) % 2 == 0 else "binary"
        feeds = golden_inputs(model)
        rows = len(next(iter(feeds.values())))
        count = 1 + i % min(3, rows)
        start = (i * 5) % (rows - count + 1)
        specs.append((model, variant, mode, {k: v[start : start + count] for k, v in feeds.items()}))
    return specs


def run_request(base_url: str, v2_codec, spec) -> dict:
    model, variant, mode, feeds = spec
    path = f"/v2/models/{model}/versions/{variant}/infer"
    if mode == "json":
        reply = http_request(base_url, "POST", path, v2_codec.json_request(feeds), {"Content-Type": "application/json"})
        length = None
    else:
        body, header_length = v2_codec.binary_request(feeds)
        reply = http_request(
            base_url,
            "POST",
            path,
            body,
            {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(header_length)},
        )
        length = reply.headers.get("Inference-Header-Content-Length")
        assert length is not None, reply.data[:300]
    assert reply.status_code == 200, f"{spec[:3]}: HTTP {reply.status_code}: {reply.data[:300]!r}"
    return v2_codec.parse_response(reply.data, length)[1]


def test_concurrent_clients_get_the_serial_results(
    live_server, golden_inputs, reference_outputs, v2_codec, demo_manifest
):
    specs = concurrency_requests(golden_inputs)
    serial = [run_request(live_server, v2_codec, spec) for spec in specs]
    for spec, outputs in zip(specs, serial):
        assert_outputs_equal(outputs, reference_outputs(spec[0], spec[1], spec[3]))

    barrier = threading.Barrier(THREADS)

    def worker(chunk):
        barrier.wait(timeout=60)  # all threads start together
        return [run_request(live_server, v2_codec, spec) for spec in chunk]

    chunks = [specs[t::THREADS] for t in range(THREADS)]
    with ThreadPoolExecutor(THREADS) as pool:
        results = [future.result() for future in [pool.submit(worker, chunk) for chunk in chunks]]

    concurrent = [None] * len(specs)
    for t, chunk_results in enumerate(results):
        for j, outputs in enumerate(chunk_results):
            concurrent[t + j * THREADS] = outputs
    assert len(specs) == THREADS * PER_THREAD
    for spec, expected, got in zip(specs, serial, concurrent):
        assert got is not None
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{spec[:3]} {name}")


# --------------------------------------------------------------------------- raw paths


@pytest.mark.parametrize(
    "raw_path",
    [
        "/repository/../manifest.json",
        "/repository/%2e%2e/%2e%2e/etc/passwd",
        "/web/../server/app.py",
        "/web/%2e%2e/pyproject.toml",
        "/ort/..%2fpackage.json",
        "//etc/passwd",
        "/web/..%2f..%2f..%2fetc/passwd",
        "/repository/artifacts/..%2f..%2fmanifest.json",
        pytest.param("/web//etc/passwd"),
        pytest.param("/repository/testdata/{golden}/../../manifest.json"),
    ],
)
def test_traversal_over_the_wire_is_a_json_404(live_server, demo_manifest, assert_json_error, raw_path):
    raw_path = raw_path.replace("{golden}", demo_manifest["models"]["iris"]["golden"]["sha256"])
    reply = raw_request(live_server, raw_path)
    assert b"root:" not in reply.data and b"[project]" not in reply.data
    assert_json_error(reply, 404)


def test_artifact_over_the_wire(live_server, demo_manifest):
    record = demo_manifest["models"]["digits"]["variants"]["int8-static"]
    reply = http_request(live_server, "GET", f"/repository/{record['file']}")
    assert reply.status_code == 200
    assert int(reply.headers.get("Content-Length")) == record["bytes"] == len(reply.data)
    assert reply.headers.get("ETag") == f'"{record["sha256"]}"'
    ranged = http_request(live_server, "GET", f"/repository/{record['file']}", headers={"Range": "bytes=0-99"})
    assert ranged.status_code == 206 and ranged.data == reply.data[:100]


def test_a_busy_port_is_one_clear_error(live_server, demo_repository, assert_one_line_error):
    import subprocess
    import sys
    from pathlib import Path

    # A subprocess, as users run it: waitress leaves its half-made server to the exiting process.
    port = urlsplit(live_server).port
    done = subprocess.run(
        [sys.executable, "-m", "onnxport", "serve", "--repository", str(demo_repository), "--port", str(port)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert_one_line_error(done.stderr, f"127.0.0.1:{port}", "pass --port")
    assert "serving" not in done.stdout
