"""The V2 (Open Inference Protocol) endpoints through Flask's test client on the real app.

Results are compared with a local onnxruntime session on the same artifact file, fed the model's
golden inputs (reference_outputs / golden_inputs in tests/fixtures/repository.py).
"""

from __future__ import annotations

import gzip
import json
import zlib

import numpy as np
import pytest

from onnxport.serving.app import create_app

MODELS = ["iris", "digits", "minilm"]
VARIANTS = ["fp32", "fp16", "int8-dynamic", "int8-static"]
MODEL_VARIANTS = [(m, v) for m in MODELS for v in VARIANTS]
JSON = "application/json"

# The demo models' V2 metadata, written out: every named (dynamic) dimension is -1.
METADATA = {
    "iris": {
        "inputs": [{"name": "features", "datatype": "FP32", "shape": [-1, 4]}],
        "outputs": [{"name": "label", "datatype": "INT64", "shape": [-1]},
                    {"name": "probabilities", "datatype": "FP32", "shape": [-1, 3]}],
    },
    "digits": {
        "inputs": [{"name": "pixels", "datatype": "FP32", "shape": [-1, 1, 8, 8]}],
        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}],
    },
    "minilm": {
        "inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [-1, -1]},
                   {"name": "attention_mask", "datatype": "INT64", "shape": [-1, -1]}],
        "outputs": [{"name": "sentence_embedding", "datatype": "FP32", "shape": [-1, 384]}],
    },
}


@pytest.fixture(scope="module")
def app(demo_repository):
    return create_app({"repository": demo_repository})


@pytest.fixture
def client(app):
    return app.test_client()


def infer_url(model: str, variant: str | None = None) -> str:
    return f"/v2/models/{model}/infer" if variant is None else f"/v2/models/{model}/versions/{variant}/infer"


def post_json(client, url: str, body, **kw):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(url, data=data, content_type=JSON, **kw)


def iris_request(**extra) -> dict:
    return {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}], **extra}


def assert_outputs_equal(actual: dict, expected: dict) -> None:
    assert list(actual) == list(expected)
    for name, value in expected.items():
        assert actual[name].dtype == value.dtype, name
        assert actual[name].shape == value.shape, name
        # Same artifact, same inputs, same session options: float outputs are bit-identical.
        np.testing.assert_array_equal(actual[name], value, err_msg=name)


# --------------------------------------------------------------------------- health and metadata


def test_live(client):
    response = client.get("/v2/health/live")
    assert response.status_code == 200
    assert response.is_json and response.json["live"] is True


def test_ready(client):
    response = client.get("/v2/health/ready")
    assert response.status_code == 200
    assert response.is_json and response.json["ready"] is True


def test_empty_repository_is_live_but_not_ready(tmp_path):
    client = create_app({"repository": tmp_path}).test_client()
    assert client.get("/v2/health/live").status_code == 200
    response = client.get("/v2/health/ready")
    assert response.status_code == 503
    assert response.is_json
    assert "onnxport build" in response.json["error"]


def test_not_ready_is_the_one_error_shape(tmp_path, assert_json_error):
    client = create_app({"repository": tmp_path}).test_client()
    assert_json_error(client.get("/v2/health/ready"), 503, "onnxport build")


def test_empty_repository_has_no_models(tmp_path, assert_json_error):
    client = create_app({"repository": tmp_path}).test_client()
    assert_json_error(client.get("/v2/models/iris"), 404, "'iris'", "none")
    assert_json_error(post_json(client, infer_url("iris"), iris_request()), 404, "'iris'")


def test_server_metadata(client):
    response = client.get("/v2")
    assert response.status_code == 200
    body = response.json
    assert body["name"] == "onnxport"
    assert isinstance(body["version"], str) and body["version"]
    assert "binary_tensor_data" in body["extensions"]


@pytest.mark.parametrize("model", MODELS)
def test_model_metadata(client, demo_manifest, model):
    response = client.get(f"/v2/models/{model}")
    assert response.status_code == 200 and response.is_json
    body = response.json
    served = [v for v in VARIANTS if demo_manifest["models"][model]["variants"][v]["status"] == "ok"]
    assert body == {"name": model, "versions": served, "platform": "onnx_onnxv1", **METADATA[model]}
    assert body["versions"][0] == "fp32"


@pytest.mark.parametrize("model, variant", MODEL_VARIANTS)
def test_version_metadata(client, served, model, variant):
    served(model, variant)
    response = client.get(f"/v2/models/{model}/versions/{variant}")
    assert response.status_code == 200
    assert response.json == {"name": model, "versions": [variant], "platform": "onnx_onnxv1", **METADATA[model]}


@pytest.mark.parametrize("model", MODELS)
def test_model_ready(client, model):
    response = client.get(f"/v2/models/{model}/ready")
    assert response.status_code == 200
    assert response.json == {"name": model, "version": "fp32", "ready": True}


@pytest.mark.parametrize("model, variant", MODEL_VARIANTS)
def test_version_ready(client, served, model, variant):
    served(model, variant)
    response = client.get(f"/v2/models/{model}/versions/{variant}/ready")
    assert response.status_code == 200
    assert response.json == {"name": model, "version": variant, "ready": True}


def test_metadata_and_ready_of_unknown_models_and_versions(client, assert_json_error):
    assert_json_error(client.get("/v2/models/nope"), 404, "'nope'", "iris")
    assert_json_error(client.get("/v2/models/nope/ready"), 404, "'nope'")
    assert_json_error(client.get("/v2/models/iris/versions/fp64"), 404, "'fp64'", "'iris'", "fp32")
    assert_json_error(client.get("/v2/models/iris/versions/fp64/ready"), 404, "'fp64'")


# --------------------------------------------------------------------------- inference


@pytest.mark.parametrize("model, variant", MODEL_VARIANTS)
def test_json_inference_equals_onnxruntime(client, served, golden_inputs, reference_outputs, v2_codec, model, variant):
    served(model, variant)
    feeds = golden_inputs(model)
    response = client.post(infer_url(model, variant), data=v2_codec.json_request(feeds), content_type=JSON)
    assert response.status_code == 200, response.data[:500]
    assert response.mimetype == JSON
    assert "Inference-Header-Content-Length" not in response.headers
    header, outputs = v2_codec.parse_response(response.data, None)
    assert header["model_name"] == model and header["model_version"] == variant
    assert all("data" in o for o in header["outputs"])
    assert_outputs_equal(outputs, reference_outputs(model, variant, feeds))


@pytest.mark.parametrize("model, variant", MODEL_VARIANTS)
def test_binary_inference_equals_onnxruntime(client, served, golden_inputs, reference_outputs, v2_codec, model, variant):
    served(model, variant)
    feeds = golden_inputs(model)
    body, header_length = v2_codec.binary_request(feeds, binary_output=True)
    response = client.post(infer_url(model, variant), data=body, content_type="application/octet-stream",
                           headers={"Inference-Header-Content-Length": str(header_length)})
    assert response.status_code == 200, response.data[:500]
    assert response.mimetype == "application/octet-stream"
    length = response.headers["Inference-Header-Content-Length"]
    header, outputs = v2_codec.parse_response(response.data, length)
    assert all("parameters" in o and "data" not in o for o in header["outputs"])
    assert_outputs_equal(outputs, reference_outputs(model, variant, feeds))


@pytest.mark.parametrize("model", MODELS)
def test_binary_request_with_json_response_and_nested_json(client, golden_inputs, reference_outputs, v2_codec, model):
    feeds = golden_inputs(model)
    expected = reference_outputs(model, "fp32", feeds)
    body, header_length = v2_codec.binary_request(feeds, binary_output=None)
    response = client.post(infer_url(model), data=body, content_type="application/octet-stream",
                           headers={"Inference-Header-Content-Length": str(header_length)})
    assert response.status_code == 200 and response.mimetype == JSON
    assert_outputs_equal(v2_codec.parse_response(response.data, None)[1], expected)

    response = post_json(client, infer_url(model), v2_codec.json_request(feeds, nested=True))
    assert response.status_code == 200
    assert_outputs_equal(v2_codec.parse_response(response.data, None)[1], expected)


def test_default_version_is_fp32(client, golden_inputs, reference_outputs, v2_codec):
    feeds = golden_inputs("iris")
    response = post_json(client, infer_url("iris"), v2_codec.json_request(feeds))
    header, outputs = v2_codec.parse_response(response.data, None)
    assert header["model_version"] == "fp32"
    assert_outputs_equal(outputs, reference_outputs("iris", "fp32", feeds))


def test_outputs_selects_one_output(client, golden_inputs, reference_outputs, v2_codec):
    feeds = golden_inputs("iris")
    response = post_json(client, infer_url("iris"), v2_codec.json_request(feeds, outputs=["label"]))
    assert response.status_code == 200
    header, outputs = v2_codec.parse_response(response.data, None)
    assert [o["name"] for o in header["outputs"]] == ["label"]
    np.testing.assert_array_equal(outputs["label"], reference_outputs("iris", "fp32", feeds)["label"])


def test_per_output_binary_data(client, golden_inputs, reference_outputs, v2_codec):
    feeds = golden_inputs("iris")
    outputs = [{"name": "probabilities", "parameters": {"binary_data": True}}, {"name": "label"}]
    response = post_json(client, infer_url("iris"), v2_codec.json_request(feeds, outputs=outputs))
    assert response.status_code == 200
    header, values = v2_codec.parse_response(response.data, response.headers["Inference-Header-Content-Length"])
    assert [o["name"] for o in header["outputs"]] == ["probabilities", "label"]
    assert "parameters" in header["outputs"][0] and "data" in header["outputs"][1]
    assert_outputs_equal({k: values[k] for k in ("label", "probabilities")}, reference_outputs("iris", "fp32", feeds))


def test_id_is_echoed(client):
    response = post_json(client, infer_url("iris"), iris_request(id="my-request-7"))
    assert response.status_code == 200
    assert response.json["id"] == "my-request-7"
    assert "id" not in post_json(client, infer_url("iris"), iris_request()).json


def test_form_urlencoded_body_is_read_as_json(client):
    # What `curl -d` sends.
    response = client.post(infer_url("iris"), data=json.dumps(iris_request()), content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200
    assert response.json["outputs"][0]["name"] == "label"


@pytest.mark.parametrize("encoding, compress", [("gzip", gzip.compress), ("deflate", zlib.compress)])
def test_compressed_request_body(client, encoding, compress):
    response = client.post(infer_url("iris"), data=compress(json.dumps(iris_request()).encode()), content_type=JSON,
                           headers={"Content-Encoding": encoding})
    assert response.status_code == 200
    assert response.json["model_name"] == "iris"


# --------------------------------------------------------------------------- errors


def features(**changes) -> dict:
    return {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [1.0, 2.0, 3.0, 4.0], **changes}]}


def test_malformed_json(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), b'{"inputs": [{"name": '), 400, "not valid JSON")


def test_body_without_inputs(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), {"outputs": []}), 400, "'inputs'")


def test_unknown_input(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), features(name="sepal")), 400, "unknown input 'sepal'", "features")


def test_missing_input(client, assert_json_error):
    body = {"inputs": [{"name": "input_ids", "shape": [1, 3], "datatype": "INT64", "data": [101, 7592, 102]}]}
    assert_json_error(post_json(client, infer_url("minilm"), body), 400, "missing input 'attention_mask'", "INT64")


def test_wrong_datatype(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), features(datatype="FP64")), 400,
                      "'features'", "FP64", "expects FP32")


def test_wrong_datatype_of_an_integer_input(client, assert_json_error):
    body = {"inputs": [{"name": "input_ids", "shape": [1, 1], "datatype": "INT32", "data": [101]},
                       {"name": "attention_mask", "shape": [1, 1], "datatype": "INT64", "data": [1]}]}
    assert_json_error(post_json(client, infer_url("minilm", "int8-static"), body), 400, "'input_ids'", "INT32", "expects INT64")


def test_wrong_rank(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), features(shape=[4])), 400, "'features'", "[4]", "[-1, 4]")


def test_wrong_fixed_dimension(client, assert_json_error):
    body = features(shape=[1, 5], data=[1.0] * 5)
    assert_json_error(post_json(client, infer_url("iris"), body), 400, "'features'", "[1, 5]", "[-1, 4]")
    pixels = {"inputs": [{"name": "pixels", "shape": [1, 1, 8, 7], "datatype": "FP32", "data": [0.0] * 56}]}
    assert_json_error(post_json(client, infer_url("digits", "fp16"), pixels), 400, "'pixels'", "[-1, 1, 8, 8]")


def test_empty_batch(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), features(shape=[0, 4], data=[])), 400, "'features'", "no elements")


def test_element_count_mismatch(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), features(data=[1.0, 2.0, 3.0])), 400,
                      "'features'", "3 data elements", "4 elements")


def binary_features(size: int, payload: bytes, header_length_delta: int = 0):
    header = json.dumps({"inputs": [{"name": "features", "shape": [2, 4], "datatype": "FP32",
                                     "parameters": {"binary_data_size": size}}]}).encode()
    return header + payload, str(len(header) + header_length_delta)


@pytest.mark.parametrize("size, payload, fragments", [
    (30, b"\0" * 30, ["'features'", "30 bytes", "need 32"]),
    (32, b"\0" * 16, ["'features'", "past the end", "16 bytes left"]),
    (32, b"\0" * 40, ["add up to 32 bytes", "40 bytes follow"]),
])
def test_binary_sizes_that_do_not_add_up(client, assert_json_error, size, payload, fragments):
    body, length = binary_features(size, payload)
    response = client.post(infer_url("iris"), data=body, content_type="application/octet-stream",
                           headers={"Inference-Header-Content-Length": length})
    assert_json_error(response, 400, *fragments)


@pytest.mark.parametrize("value, fragments", [
    ("twelve", ["Inference-Header-Content-Length", "'twelve'"]),
    ("99999", ["Inference-Header-Content-Length is 99999"]),
    ("-5", ["Inference-Header-Content-Length is -5"]),
    ("20", ["not valid JSON"]),
])
def test_bad_inference_header_content_length(client, assert_json_error, value, fragments):
    body, _ = binary_features(32, b"\0" * 32)
    response = client.post(infer_url("iris"), data=body, content_type="application/octet-stream",
                           headers={"Inference-Header-Content-Length": value})
    assert_json_error(response, 400, *fragments)


def test_unknown_model(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("resnet"), iris_request()), 404, "unknown model 'resnet'", "iris")


def test_unknown_version(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris", "int4"), iris_request()), 404, "'int4'", "fp32")


def test_unknown_output(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), iris_request(outputs=[{"name": "logits"}])), 400,
                      "unknown output 'logits'", "label", "probabilities")


def test_body_over_max_request_bytes(demo_repository, assert_json_error):
    client = create_app({"repository": demo_repository, "max_request_bytes": 1000}).test_client()
    assert post_json(client, infer_url("iris"), iris_request()).status_code == 200  # small is fine
    big = features(shape=[100, 4], data=[1.0] * 400)
    assert len(json.dumps(big)) > 1000
    assert_json_error(post_json(client, infer_url("iris"), big), 413, "too large")


def test_compressed_body_over_max_request_bytes(demo_repository, assert_json_error):
    client = create_app({"repository": demo_repository, "max_request_bytes": 1000}).test_client()
    big = gzip.compress(json.dumps(features(shape=[100, 4], data=[1.0] * 400)).encode())
    assert len(big) < 1000
    response = client.post(infer_url("iris"), data=big, content_type=JSON, headers={"Content-Encoding": "gzip"})
    assert_json_error(response, 413, "1000")


def test_get_on_infer(client, assert_json_error):
    response = client.get(infer_url("iris"))
    assert_json_error(response, 405, "POST")
    assert "POST" in response.headers["Allow"]


def test_text_plain(client, assert_json_error):
    response = client.post(infer_url("iris"), data=json.dumps(iris_request()), content_type="text/plain")
    assert_json_error(response, 415, "'text/plain'", "application/json")


def test_unknown_content_encoding(client, assert_json_error):
    response = client.post(infer_url("iris"), data=json.dumps(iris_request()), content_type=JSON,
                           headers={"Content-Encoding": "br"})
    assert_json_error(response, 415, "'br'")


def test_corrupt_gzip_body(client, assert_json_error):
    response = client.post(infer_url("iris"), data=b"not gzip at all", content_type=JSON, headers={"Content-Encoding": "gzip"})
    assert_json_error(response, 400, "gzip")


def test_unknown_api_path(client, assert_json_error):
    assert_json_error(client.get("/v2/nothing/here"), 404)


def test_rejected_variant_is_not_served(repository_copy, replace_manifest, assert_json_error):
    repository = repository_copy(["iris"])
    manifest = json.loads((repository / "manifest.json").read_text())
    reason = "top-1 agreement 0.5000 < 0.99 (test)"
    manifest["models"]["iris"]["variants"]["int8-static"].update(status="rejected", reason=reason)
    replace_manifest(repository, manifest)
    client = create_app({"repository": repository}).test_client()

    assert_json_error(post_json(client, infer_url("iris", "int8-static"), iris_request()), 404,
                      "'int8-static'", "'iris'", "rejected", reason)
    assert_json_error(client.get("/v2/models/iris/versions/int8-static"), 404, "rejected", reason)
    assert_json_error(client.get("/v2/models/iris/versions/int8-static/ready"), 404, "rejected")
    assert client.get("/v2/models/iris").json["versions"] == ["fp32", "fp16", "int8-dynamic"]
    assert post_json(client, infer_url("iris", "int8-dynamic"), iris_request()).status_code == 200


def test_served_versions_put_fp32_first_whatever_the_manifest_order(repository_copy, replace_manifest):
    repository = repository_copy(["iris"])
    manifest = json.loads((repository / "manifest.json").read_text())
    variants = manifest["models"]["iris"]["variants"]
    manifest["models"]["iris"]["variants"] = {k: variants[k] for k in ["int8-static", "fp16", "fp32", "int8-dynamic"]}
    (repository / "manifest.json").write_text(json.dumps(manifest))  # not sorted, unlike a build's
    client = create_app({"repository": repository}).test_client()
    assert client.get("/v2/models/iris").json["versions"] == ["fp32", "fp16", "int8-dynamic", "int8-static"]


# Client mistakes must never be a 500, however odd the request.
CLIENT_MISTAKES = {
    "inputs is an object": {"inputs": {"features": [1, 2, 3, 4]}},
    "input is a string": {"inputs": ["features"]},
    "data is an object": features(data={"a": 1}),
    "shape of strings": features(shape=["1", "4"]),
    "huge shape": features(shape=[10**12, 4]),
    "outputs of strings": iris_request(outputs=["label"]),
    "null body": None,
    "input parameters a list": features(parameters=["binary_data_size"]),
    "request parameters a list": iris_request(parameters=["binary_data_output"]),
    "output parameters a string": iris_request(outputs=[{"name": "label", "parameters": "binary_data"}]),
    "integer beyond the float range": features(data=[1, 2, 3, 10**400]),
    "element count overflowing int64": features(shape=[2**40, 2**40], data=[]),
}


@pytest.mark.parametrize("case", list(CLIENT_MISTAKES))
def test_client_mistake_is_a_400(client, assert_json_error, case):
    body = CLIENT_MISTAKES[case]
    assert_json_error(post_json(client, infer_url("iris"), json.dumps(body)), 400)
