"""V2 inference on the demo app, JSON and binary: outputs equal a local onnxruntime session's on the same artifact."""

from __future__ import annotations

import gzip
import json
import zlib

import numpy as np
import pytest
from v2_helpers import JSON, MODEL_VARIANTS, MODELS, infer_url, iris_request, post_json


@pytest.fixture
def client(demo_app):
    return demo_app.test_client()


def assert_outputs_equal(actual: dict, expected: dict) -> None:
    assert list(actual) == list(expected)
    for name, value in expected.items():
        assert actual[name].dtype == value.dtype, name
        assert actual[name].shape == value.shape, name
        # Same artifact, same inputs, same session options: float outputs are bit-identical.
        np.testing.assert_array_equal(actual[name], value, err_msg=name)


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
def test_binary_inference_equals_onnxruntime(
    client, served, golden_inputs, reference_outputs, v2_codec, model, variant
):
    served(model, variant)
    feeds = golden_inputs(model)
    body, header_length = v2_codec.binary_request(feeds, binary_output=True)
    response = client.post(
        infer_url(model, variant),
        data=body,
        content_type="application/octet-stream",
        headers={"Inference-Header-Content-Length": str(header_length)},
    )
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
    response = client.post(
        infer_url(model),
        data=body,
        content_type="application/octet-stream",
        headers={"Inference-Header-Content-Length": str(header_length)},
    )
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


def test_form_urlencoded_body_is_refused(client):
    # What `curl -d` sends, and what a page of any origin may send without a preflight.
    response = client.post(
        infer_url("iris"), data=json.dumps(iris_request()), content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415
    assert "add -H 'Content-Type: application/json'" in response.json["error"]


@pytest.mark.parametrize("encoding, compress", [("gzip", gzip.compress), ("deflate", zlib.compress)])
def test_compressed_request_body(client, encoding, compress):
    response = client.post(
        infer_url("iris"),
        data=compress(json.dumps(iris_request()).encode()),
        content_type=JSON,
        headers={"Content-Encoding": encoding},
    )
    assert response.status_code == 200
    assert response.json["model_name"] == "iris"
