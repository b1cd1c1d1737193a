"""GET /metrics: the Prometheus text format, parsed with prometheus_client's own parser, before and after
known traffic (successes, 400s, 404s, JSON and binary): each counter moves by exactly what was sent."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from v2_helpers import infer_url, iris_request, post_json

from onnxport.serving.app import create_app


def scrape(client) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def requests(samples, model, version, protocol, status) -> float:
    key = (
        "onnxport_inference_requests_total",
        tuple(sorted({"model": model, "version": version, "protocol": protocol, "status": status}.items())),
    )
    return samples.get(key, 0.0)


def test_counters_equal_the_traffic_sent(demo_repository, v2_codec, golden_inputs):
    app = create_app({"repository": demo_repository})  # its own registry: starts at zero
    client = app.test_client()
    before = scrape(client)
    assert requests(before, "iris", "fp32", "json", "2xx") == 0
    for _ in range(3):
        assert post_json(client, infer_url("iris"), iris_request()).status_code == 200
    assert post_json(client, infer_url("iris", "fp16"), iris_request()).status_code == 200
    body, length = v2_codec.binary_request(golden_inputs("iris"), binary_output=True)
    for _ in range(2):
        response = client.post(
            infer_url("iris", "fp32"),
            data=body,
            content_type="application/octet-stream",
            headers={"Inference-Header-Content-Length": str(length)},
        )
        assert response.status_code == 200
    bad = {"inputs": [{"name": "features", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]}]}
    for _ in range(2):
        assert post_json(client, infer_url("iris"), bad).status_code == 400
    assert post_json(client, infer_url("no-such-model"), iris_request()).status_code == 404
    assert post_json(client, infer_url("iris", "fp7"), iris_request()).status_code == 404

    after = scrape(client)
    assert requests(after, "iris", "fp32", "json", "2xx") == 3
    assert requests(after, "iris", "fp16", "json", "2xx") == 1
    assert requests(after, "iris", "fp32", "binary", "2xx") == 2
    assert requests(after, "iris", "fp32", "json", "4xx") == 2
    # Unknown names share one label: a client cannot grow the series without bound.
    assert requests(after, "_unknown", "_unknown", "json", "4xx") == 2
    assert after[("onnxport_inference_request_seconds_count", (("model", "iris"), ("version", "fp32")))] == 7
    assert after[("onnxport_inference_compute_seconds_count", (("model", "iris"), ("version", "fp32")))] == 5
    assert after[("onnxport_inference_queue_seconds_count", (("model", "iris"), ("version", "fp32")))] == 5
    assert after[("onnxport_inference_requests_in_flight", ())] == 0
    assert after[("onnxport_session_load_seconds_count", ())] == 2  # iris fp32 and fp16, each loaded once
    assert after[("onnxport_sessions_loaded", ())] == 2
    assert after[("process_resident_memory_bytes", ())] > 10_000_000


def test_each_app_has_its_own_registry(demo_repository):
    first, second = create_app({"repository": demo_repository}), create_app({"repository": demo_repository})
    assert post_json(first.test_client(), infer_url("iris"), iris_request()).status_code == 200
    assert requests(scrape(first.test_client()), "iris", "fp32", "json", "2xx") == 1
    assert requests(scrape(second.test_client()), "iris", "fp32", "json", "2xx") == 0
