"""The dynamic batcher's wait is measured apart: a request's queue time is how long it waited for its batch
to start, compute_infer is only the run, and each batch that ran is counted once with its rows, in /metrics
(onnxport_inference_batch_size) and in Triton's batch_stats."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from test_metrics import scrape
from v2_helpers import infer_url, post_json

from onnxport.serving.app import create_app

LABELS = (("model", "digits"), ("version", "fp32"))
PHASES = ("queue", "compute_input", "compute_infer", "compute_output")


def digits_request(rows: int, seed: int) -> dict:
    pixels = np.random.default_rng(seed).random((rows, 1, 8, 8), dtype=np.float32)
    return {
        "inputs": [{"name": "pixels", "shape": list(pixels.shape), "datatype": "FP32", "data": pixels.ravel().tolist()}]
    }


def send_concurrently(app, rows: list[int], clients: int = 16) -> None:
    start = threading.Barrier(clients)

    def send(job: tuple[int, int]) -> None:
        index, n = job
        if index < clients:
            start.wait()  # the first requests arrive together, so batches form
        response = post_json(app.test_client(), infer_url("digits", "fp32"), digits_request(n, index))
        assert response.status_code == 200, response.get_data(as_text=True)

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(send, enumerate(rows)))


def digits_stats(app) -> dict:
    [entry] = app.test_client().get("/v2/models/digits/versions/fp32/stats").get_json()["model_stats"]
    return entry


def test_batched_requests_report_their_wait_and_their_batches(demo_repository):
    app = create_app(
        {"repository": demo_repository, "dynamic_batching": "digits", "batch_window_ms": 50, "max_batch": 64}
    )
    rows = [1 + i % 3 for i in range(48)]
    send_concurrently(app, rows)

    samples = scrape(app.test_client())
    assert samples[("onnxport_inference_queue_seconds_count", LABELS)] == len(rows)
    assert samples[("onnxport_inference_queue_seconds_sum", LABELS)] > 0, "no request waited for its batch"
    batches = samples[("onnxport_inference_batch_size_count", LABELS)]
    assert samples[("onnxport_inference_batch_size_sum", LABELS)] == sum(rows), "batch sizes do not add up"
    assert 1 <= batches < len(rows), f"{batches} batches for {len(rows)} concurrent requests: nothing joined"

    entry = digits_stats(app)
    inference = entry["inference_stats"]
    assert inference["queue"]["count"] == len(rows) and inference["queue"]["ns"] > 0
    # The phases split each request's time: the wait is not also counted in compute_infer.
    assert sum(inference[p]["ns"] for p in PHASES) <= inference["success"]["ns"]
    assert entry["inference_count"] == sum(rows)
    assert entry["execution_count"] == batches
    batch_stats = entry["batch_stats"]
    assert sum(b["batch_size"] * b["compute_infer"]["count"] for b in batch_stats) == sum(rows)
    assert sum(b["compute_infer"]["count"] for b in batch_stats) == batches
    assert all(b["compute_infer"]["ns"] > 0 for b in batch_stats)
    assert max(b["batch_size"] for b in batch_stats) > 3, "no batch joined requests"


def test_without_batching_there_is_no_queue_and_each_request_is_an_execution(demo_repository):
    app = create_app({"repository": demo_repository, "dynamic_batching": "none"})
    rows = [1 + i % 3 for i in range(24)]
    send_concurrently(app, rows, clients=8)

    samples = scrape(app.test_client())
    assert samples[("onnxport_inference_queue_seconds_count", LABELS)] == len(rows)
    assert samples[("onnxport_inference_queue_seconds_sum", LABELS)] == 0
    assert ("onnxport_inference_batch_size_count", LABELS) not in samples  # observed only when batching
    entry = digits_stats(app)
    assert entry["inference_stats"]["queue"] == {"count": len(rows), "ns": 0}
    assert entry["execution_count"] == len(rows)
    assert {b["batch_size"]: b["compute_infer"]["count"] for b in entry["batch_stats"]} == {
        n: rows.count(n) for n in set(rows)
    }
