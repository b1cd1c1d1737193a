"""The operator's side of `onnxport serve --engine ray` on a real local Ray cluster with 2 replicas: /metrics,
Triton's statistics and the repository API answer for the whole deployment (serving/ray/replicas.py), not
for the one replica Ray's proxy picked. Known traffic (JSON and binary, two versions, 4xx errors, unknown
names) is counted exactly once, summed over the `replica` label; load and unload act on every replica
with the admin token and are refused without it. One cluster for the module (its start is most of the time).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from fixtures.servers import ray_test_server

pytestmark = [pytest.mark.slow, pytest.mark.ray]

TOKEN = "ray-operator-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
IRIS = {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.9, 3.0, 5.1, 1.8]}]}
BAD = {"inputs": []}  # a 400 for a served model: counted under its name and version
# (path, body, protocol, expected status, how many): the known traffic, sent in two halves.
TRAFFIC = [
    ("/v2/models/iris/infer", IRIS, "json", 200, 12),
    ("/v2/models/iris/versions/fp16/infer", IRIS, "json", 200, 6),
    ("/v2/models/iris/infer", BAD, "json", 400, 4),
    ("/v2/models/iris/versions/fp16/infer", BAD, "json", 400, 2),
    ("/v2/models/resnet/infer", IRIS, "json", 404, 2),  # unknown: counted as _unknown
]
BINARY = 6  # iris fp32 through tritonclient's binary tensor extension, per half


@pytest.fixture(scope="module")
def ray_operations_server(demo_repository, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray-operations")
    with ray_test_server(
        ["--replicas", "2", "--repository", str(demo_repository)],
        folder,
        {"ONNXPORT_ADMIN_TOKEN": TOKEN, "ONNXPORT_DYNAMIC_BATCHING": "all"},
    ) as server:
        yield server
    assert TOKEN not in server.log()


def request(base_url: str, path: str, body: dict | None = None) -> tuple[int, str | None, bytes]:
    data = None if body is None else json.dumps(body).encode()
    sent = urllib.request.Request(base_url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(sent, timeout=60) as response:
            return response.status, response.headers.get("X-Onnxport-Replica"), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers.get("X-Onnxport-Replica"), error.read()


def scrape(base_url: str, sums: Counter | None = None) -> tuple[Counter, Counter, set[str]]:
    """(requests by model, version, protocol, status class; request-latency counts by model, version),
    both summed over `replica`, and the replica label values; `sums` hears every other sample, by its name,
    model and version, summed over `replica`."""
    status, _, text = request(base_url, "/metrics")
    assert status == 200
    requests: Counter = Counter()
    latencies: Counter = Counter()
    replicas = set()
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "onnxport_inference_requests_total":
                requests[labels["model"], labels["version"], labels["protocol"], labels["status"]] += sample.value
            elif sample.name == "onnxport_inference_request_seconds_count":
                latencies[labels["model"], labels["version"]] += sample.value
            elif sums is not None and "le" not in labels:
                sums[sample.name, labels.get("model"), labels.get("version")] += sample.value
            if "replica" in labels:
                replicas.add(labels["replica"])
    return requests, latencies, replicas


def triton(base_url: str):
    import tritonclient.http as httpclient

    return httpclient.InferenceServerClient(urlsplit(base_url).netloc)


def send_half(base_url: str) -> set[str]:
    """Half the known traffic, 4 clients at once; the replicas that answered."""
    import tritonclient.http as httpclient

    jobs = [(path, body, status) for path, body, _, status, count in TRAFFIC for _ in range(count // 2)]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda job: request(base_url, job[0], job[1]), jobs))
    for (path, _, status), (got, _, body) in zip(jobs, answers):
        assert got == status, (path, got, body)
    client = triton(base_url)
    try:
        features = np.array([IRIS["inputs"][0]["data"]], dtype=np.float32)
        tensor = httpclient.InferInput("features", [1, 4], "FP32")
        tensor.set_data_from_numpy(features, binary_data=True)
        for _ in range(BINARY // 2):
            client.infer("iris", [tensor])
    finally:
        client.close()
    return {replica for _, replica, _ in answers}


def expected(halves: int) -> tuple[Counter, Counter]:
    requests: Counter = Counter()
    for path, _, protocol, status, count in TRAFFIC:
        model = path.split("/")[3]
        version = path.split("/")[5] if "/versions/" in path else "fp32"
        if model == "resnet":
            model = version = "_unknown"
        requests[model, version, protocol, f"{status // 100}xx"] += count // 2 * halves
    requests["iris", "fp32", "binary", "2xx"] += BINARY // 2 * halves
    latencies = Counter({(m, v): 0 for m, v, _, _ in requests if m != "_unknown"})
    for (model, version, _, _), count in requests.items():
        if model != "_unknown":
            latencies[model, version] += count
    return requests, latencies


def delta(after: Counter, before: Counter) -> Counter:
    return Counter({key: after[key] - before[key] for key in after if after[key] != before[key]})


def test_metrics_and_statistics_count_known_traffic_once_over_both_replicas(ray_operations_server):
    base_url = ray_operations_server.base_url
    sums_before: Counter = Counter()
    requests_before, latencies_before, _ = scrape(base_url, sums_before)
    answered_by = send_half(base_url)
    requests_mid, latencies_mid, _ = scrape(base_url)  # during: half the traffic sent, all of it answered
    assert delta(requests_mid, requests_before) == expected(1)[0]
    assert delta(latencies_mid, latencies_before) == +expected(1)[1]
    answered_by |= send_half(base_url)
    sums_after: Counter = Counter()
    requests_after, latencies_after, replicas = scrape(base_url, sums_after)
    assert delta(requests_after, requests_before) == expected(2)[0]
    assert delta(latencies_after, latencies_before) == +expected(2)[1]
    assert len(answered_by) == 2, f"one replica answered all the traffic: {answered_by}"
    assert answered_by <= replicas and len(replicas) == 2, (answered_by, replicas)
    # Ray's @serve.batch (batching is on for every model): each successful request waited in its queue
    # once, and ran in one batch, whose rows (1 per request) are observed once.
    sums = delta(sums_after, sums_before)
    for version in ("fp32", "fp16"):
        succeeded = sum(n for (m, v, _, s), n in expected(2)[0].items() if (m, v, s) == ("iris", version, "2xx"))
        assert sums["onnxport_inference_queue_seconds_count", "iris", version] == succeeded
        assert sums["onnxport_inference_batch_size_sum", "iris", version] == succeeded
        assert 0 < sums["onnxport_inference_batch_size_count", "iris", version] <= succeeded

    # Triton's statistics, summed over the replicas the same way, agree with the counters.
    client = triton(base_url)
    try:
        for version in ("fp32", "fp16"):
            (stats,) = client.get_inference_statistics("iris", version)["model_stats"]
            success = sum(n for (m, v, _, s), n in requests_after.items() if (m, v, s) == ("iris", version, "2xx"))
            failed = sum(n for (m, v, _, s), n in requests_after.items() if (m, v, s) == ("iris", version, "4xx"))
            assert stats["inference_stats"]["success"]["count"] == success > 0
            assert stats["inference_stats"]["fail"]["count"] == failed > 0
            assert stats["last_inference"] > 0 and stats["inference_stats"]["success"]["ns"] > 0
            queue = stats["inference_stats"]["queue"]
            assert queue["count"] == success and queue["ns"] > 0
            assert sum(b["batch_size"] * b["compute_infer"]["count"] for b in stats["batch_stats"]) == success
        every = client.get_inference_statistics()["model_stats"]
        assert {(s["name"], s["version"]) for s in every} >= {("iris", "fp32"), ("iris", "fp16")}
    finally:
        client.close()

    took = []
    for _ in range(10):
        started = time.perf_counter()
        scrape(base_url)
        took.append(time.perf_counter() - started)
    print(
        f"\nGET /metrics over 2 replicas: median {statistics.median(took) * 1000:.0f} ms, "
        f"max {max(took) * 1000:.0f} ms (10 scrapes)"
    )


def test_the_extensions_and_the_repository_api_with_the_token(ray_operations_server, demo_manifest):
    from tritonclient.utils import InferenceServerException

    client = triton(ray_operations_server.base_url)
    try:
        assert {"statistics", "model_repository"} <= set(client.get_server_metadata()["extensions"])
        served = [v for v, r in demo_manifest["models"]["digits"]["variants"].items() if r["status"] == "ok"]

        def digits_states() -> set[str]:
            return {
                r["state"]
                for r in client.get_model_repository_index()
                if r["name"] == "digits" and r["version"] in served
            }

        for headers in (None, {"Authorization": "Bearer wrong"}):
            for call in (client.load_model, client.unload_model):
                with pytest.raises(InferenceServerException) as raised:
                    call("digits", headers=headers)
                assert raised.value.status() == "401" and TOKEN not in raised.value.message()
        client.load_model("digits", headers=AUTH)
        assert digits_states() == {"READY"}  # READY: every replica holds the sessions
        client.unload_model("digits", headers=AUTH)
        assert digits_states() == {"UNAVAILABLE"}
        with pytest.raises(InferenceServerException) as raised:
            client.load_model("resnet", headers=AUTH)
        assert raised.value.status() == "404"
    finally:
        client.close()


def test_a_killed_replica_is_left_out_and_the_routes_still_answer(ray_operations_server):
    """Runs last: it changes the cluster. A SIGKILLed replica's operator port is gone; the next scrape
    answers at once without it (and drops it from the registry)."""
    base_url = ray_operations_server.base_url
    _, _, replicas = scrape(base_url)
    victim = min(replicas)
    os.kill(int(victim.rsplit(":", 1)[1]), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:  # Ray's proxy may still send a request to the dead replica for a moment
        started = time.perf_counter()
        status, _, body = request(base_url, "/metrics")
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200, body
    assert time.perf_counter() - started < 5
    after = {s.labels.get("replica") for f in text_string_to_metric_families(body.decode()) for s in f.samples}
    assert victim not in after and after - {None}
    status, _, body = request(base_url, "/v2/models/iris/stats")
    assert status == 200 and json.loads(body)["model_stats"]
