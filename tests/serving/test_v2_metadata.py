"""The V2 health, server, model and version metadata and readiness endpoints, on the demo app and empty repositories."""

from __future__ import annotations

import pytest
from v2_helpers import MODEL_VARIANTS, MODELS, VARIANTS, infer_url, iris_request, post_json

from onnxport.serving.app import create_app

# The demo models' V2 metadata, written out: every named (dynamic) dimension is -1.
METADATA = {
    "iris": {
        "inputs": [{"name": "features", "datatype": "FP32", "shape": [-1, 4]}],
        "outputs": [
            {"name": "label", "datatype": "INT64", "shape": [-1]},
            {"name": "probabilities", "datatype": "FP32", "shape": [-1, 3]},
        ],
    },
    "digits": {
        "inputs": [{"name": "pixels", "datatype": "FP32", "shape": [-1, 1, 8, 8]}],
        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}],
    },
    "minilm": {
        "inputs": [
            {"name": "input_ids", "datatype": "INT64", "shape": [-1, -1]},
            {"name": "attention_mask", "datatype": "INT64", "shape": [-1, -1]},
        ],
        "outputs": [{"name": "sentence_embedding", "datatype": "FP32", "shape": [-1, 384]}],
    },
}


@pytest.fixture
def client(demo_app):
    return demo_app.test_client()


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
