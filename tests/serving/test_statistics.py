"""Triton's statistics extension: GET /v2/models[/{model}[/versions/{v}]]/stats in Triton's JSON shape,
read by tritonclient's own get_inference_statistics against a real waitress server."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from v2_helpers import infer_url, iris_request, post_json

from onnxport.serving.app import create_app

DURATIONS = {"success", "fail", "queue", "compute_input", "compute_infer", "compute_output", "cache_hit", "cache_miss"}


@pytest.fixture
def client(demo_repository):
    return create_app({"repository": demo_repository}).test_client()


def stats(client, path: str) -> list[dict]:
    response = client.get(path)
    assert response.status_code == 200, response.data
    return response.get_json()["model_stats"]


def test_counts_per_version(client, demo_manifest):
    for _ in range(3):
        assert post_json(client, infer_url("iris"), iris_request()).status_code == 200
    bad = {"inputs": [{"name": "features", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]}]}
    assert post_json(client, infer_url("iris", "fp32"), bad).status_code == 400
    [entry] = stats(client, "/v2/models/iris/versions/fp32/stats")
    assert entry["name"] == "iris" and entry["version"] == "fp32"
    inference = entry["inference_stats"]
    assert set(inference) == DURATIONS
    assert inference["success"]["count"] == 3 and inference["fail"]["count"] == 1
    assert inference["compute_infer"]["count"] == 3 and inference["compute_infer"]["ns"] > 0
    assert inference["success"]["ns"] >= inference["compute_infer"]["ns"]
    assert entry["inference_count"] == 3 and entry["execution_count"] == 3 and entry["last_inference"] > 0

    versions = stats(client, "/v2/models/iris/stats")
    assert [e["version"] for e in versions][0] == "fp32" and len(versions) > 1
    assert all(e["inference_stats"]["success"]["count"] == 0 for e in versions[1:])
    everything = stats(client, "/v2/models/stats")
    assert {e["name"] for e in everything} == set(demo_manifest["models"])


def test_unknown_model_or_version_is_a_json_404(client, assert_json_error):
    assert_json_error(client.get("/v2/models/no-such-model/stats"), 404)
    assert_json_error(client.get("/v2/models/iris/versions/fp7/stats"), 404)


def test_statistics_is_listed_in_the_extensions(client):
    assert "statistics" in client.get("/v2").get_json()["extensions"]


def test_tritonclient_reads_the_statistics(live_server):
    import tritonclient.http as httpclient

    triton = httpclient.InferenceServerClient(url=urlsplit(live_server).netloc)
    try:
        before = triton.get_inference_statistics("iris", "fp32")["model_stats"][0]["inference_stats"]
        inputs = [httpclient.InferInput("features", [1, 4], "FP32")]
        import numpy as np

        inputs[0].set_data_from_numpy(np.array([[5.1, 3.5, 1.4, 0.2]], dtype=np.float32))
        triton.infer("iris", inputs, model_version="fp32")
        after = triton.get_inference_statistics("iris", "fp32")["model_stats"][0]["inference_stats"]
        assert after["success"]["count"] == before["success"]["count"] + 1
        assert after["compute_infer"]["ns"] > before["compute_infer"]["ns"]
        every = triton.get_inference_statistics()["model_stats"]
        assert ("iris", "fp32") in {(e["name"], e["version"]) for e in every}
        assert "statistics" in triton.get_server_metadata()["extensions"]
    finally:
        triton.close()
