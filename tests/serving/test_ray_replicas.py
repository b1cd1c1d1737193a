"""serving/ray/replicas.py without a cluster: how the answers of several replicas become one (metrics with a
`replica` label, statistics summed, READY only when every replica holds the session), and the public app's
token check, which answers before any replica is asked. tests/serving/test_ray_operations.py runs the
same on a real Ray cluster with 2 replicas."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from onnxport.serving import config, state
from onnxport.serving.app import create_app
from onnxport.serving.ray import replicas

TOKEN = "s3cret-operator-token"


def replica_metrics(requests: int, seconds: list[float]) -> str:
    registry = CollectorRegistry()
    counter = Counter(
        "onnxport_inference_requests", "Inference requests answered", ["model", "status"], registry=registry
    )
    counter.labels("iris", "2xx").inc(requests)
    histogram = Histogram(
        "onnxport_inference_request_seconds", "Whole requests", ["model"], buckets=(0.1, 1), registry=registry
    )
    for value in seconds:
        histogram.labels("iris").observe(value)
    return generate_latest(registry).decode()


def test_metrics_of_two_replicas_become_one_exposition_with_a_replica_label():
    text = replicas.merge_metrics([("a:1", replica_metrics(3, [0.05])), ("b:2", replica_metrics(4, [0.5, 2]))])
    families = {f.name: f for f in text_string_to_metric_families(text.decode())}
    requests = families["onnxport_inference_requests"]
    assert requests.type == "counter" and requests.documentation == "Inference requests answered"
    by_replica = {s.labels["replica"]: s.value for s in requests.samples if s.name.endswith("_total")}
    assert by_replica == {"a:1": 3, "b:2": 4}
    latency = families["onnxport_inference_request_seconds"]
    assert latency.type == "histogram"
    count = sum(s.value for s in latency.samples if s.name.endswith("_count"))
    infinite = sum(s.value for s in latency.samples if s.name.endswith("_bucket") and s.labels["le"] == "+Inf")
    assert count == infinite == 3
    assert text.decode().count("# TYPE onnxport_inference_requests_total counter") == 1  # one family, not two


def stats_row(success: int, last: int, batch: dict[int, int]) -> dict:
    return {
        "name": "iris",
        "version": "fp32",
        "last_inference": last,
        "inference_count": success,
        "execution_count": success,
        "inference_stats": {"success": {"count": success, "ns": 10 * success}, "fail": {"count": 1, "ns": 5}},
        "batch_stats": [{"batch_size": size, "compute_infer": {"count": n, "ns": n}} for size, n in batch.items()],
        "memory_usage": [],
    }


def test_statistics_are_summed_and_the_last_inference_is_the_latest():
    summed = replicas.sum_statistics(
        [{"model_stats": [stats_row(3, 100, {1: 3})]}, {"model_stats": [stats_row(4, 250, {1: 2, 2: 1})]}]
    )
    (row,) = summed["model_stats"]
    assert (row["name"], row["version"], row["last_inference"]) == ("iris", "fp32", 250)
    assert (row["inference_count"], row["execution_count"]) == (7, 7)
    assert row["inference_stats"] == {"success": {"count": 7, "ns": 70}, "fail": {"count": 2, "ns": 10}}
    assert row["batch_stats"] == [
        {"batch_size": 1, "compute_infer": {"count": 5, "ns": 5}},
        {"batch_size": 2, "compute_infer": {"count": 1, "ns": 1}},
    ]


def test_a_version_is_ready_only_when_every_replica_holds_it():
    def row(version: str, ready: bool, reason: str = "not loaded") -> dict:
        return {
            "name": "iris",
            "version": version,
            "state": "READY" if ready else "UNAVAILABLE",
            "reason": "" if ready else reason,
        }

    merged = replicas.merge_index(
        [
            [row("fp32", True), row("fp16", True), row("int8", False, "not served: x")],
            [row("fp32", True), row("fp16", False), row("int8", False, "not served: x")],
        ]
    )
    assert merged == [
        row("fp32", True),
        row("fp16", False, "loaded on 1 of 2 replicas: POST .../load loads it on all"),
        row("int8", False, "not served: x"),
    ]


def post(app, path: str, headers: dict[str, str]) -> tuple[int, dict]:
    response = app.test_client().post(path, headers=headers)
    return response.status_code, response.get_json()


class NoReplicas:
    """A registry no request may reach: the token is checked before any replica is asked."""

    def __getattr__(self, name: str):
        raise AssertionError(f"a replica was asked ({name}) before the token was checked")


def test_ray_checks_the_token_before_asking_the_replicas(tmp_path):
    def app(**settings):
        built = state.build(config.load({"repository": str(tmp_path), **settings}, environ={}))
        return create_app(state=built, deployment=NoReplicas())

    for action in ("load", "unload"):
        path = f"/v2/repository/models/iris/{action}"
        status, body = post(app(), path, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 403 and list(body) == ["error"] and "admin_token" in body["error"]
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            status, body = post(app(admin_token=TOKEN), path, headers)
            assert status == 401 and "Authorization: Bearer" in body["error"] and TOKEN not in body["error"]
