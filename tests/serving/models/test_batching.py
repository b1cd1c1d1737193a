"""Dynamic batching: concurrent requests joined along the batch axis give each caller its own answer."""

from __future__ import annotations

import gc
import json
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from onnxport import runtime
from onnxport.repository.layout import BENCH_FILE
from onnxport.serving.app import create_app
from onnxport.serving.models.batching import DynamicBatcher
from onnxport.serving.models.batching_policy import enabled_for
from onnxport.serving.models.sessions import SessionPool


def infer(client, model: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    body = {
        "inputs": [
            {
                "name": k,
                "shape": list(v.shape),
                "datatype": "FP32" if v.dtype == np.float32 else "INT64",
                "data": v.ravel().tolist(),
            }
            for k, v in feeds.items()
        ]
    }
    response = client.post(f"/v2/models/{model}/infer", json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    return {
        o["name"]: np.array(o["data"], dtype=np.float32).reshape(o["shape"]) for o in response.get_json()["outputs"]
    }


@pytest.mark.slow
def test_concurrent_requests_with_batching_match_lone_runs(demo_repository):
    rng = np.random.default_rng(0)
    digits = [{"pixels": rng.random((1, 1, 8, 8), dtype=np.float32)} for _ in range(24)]
    lengths = [5, 9, 5, 9, 12, 5]  # minilm requests of different lengths run in separate groups
    minilm = [
        {"input_ids": rng.integers(1000, 5000, (1, n)).astype(np.int64), "attention_mask": np.ones((1, n), np.int64)}
        for n in lengths
    ]
    lone = create_app({"repository": demo_repository, "dynamic_batching": "none"}).test_client()
    expected = [infer(lone, "digits", f) for f in digits] + [infer(lone, "minilm", f) for f in minilm]

    app = create_app({"repository": demo_repository, "dynamic_batching": "all", "batch_window_ms": 20})
    jobs = [("digits", f) for f in digits] + [("minilm", f) for f in minilm]
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda job: infer(app.test_client(), *job), jobs))
    for want, have in zip(expected, got):
        for name in want:
            # A batched GEMM may round differently from a lone one; the answer is the same.
            np.testing.assert_allclose(have[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)


def doubling_model() -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y"])],
        "double",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def test_the_batcher_joins_waiting_requests_into_one_run():
    session = runtime.create_session(doubling_model(), label="double")
    runs = []
    original = session.run

    def counting_run(names, feeds, options=None):
        runs.append(next(iter(feeds.values())).shape[0])
        return original(names, feeds)

    session.run = counting_run
    batcher = DynamicBatcher(session, "double", window_ms=200, max_batch=64)
    start = threading.Barrier(8)
    inputs = [np.full((1, 3), i, np.float32) for i in range(8)]

    def call(x):
        start.wait()
        return batcher.run(["y"], {"x": x})["y"]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, inputs))
    for x, y in zip(inputs, results):
        np.testing.assert_array_equal(y, x * 2)
    assert sum(runs) == 8 and len(runs) < 8, f"expected joined runs, got batch sizes {runs}"


def test_auto_follows_the_latest_bench(tmp_path):
    settings = {"dynamic_batching": "auto", "repository": tmp_path}
    assert enabled_for(settings)("digits") is False  # no bench yet
    bench = {"recommendations": {"dynamic_batching": {"digits": True, "minilm": False}}}
    (tmp_path / BENCH_FILE).write_text(json.dumps(bench))
    policy = enabled_for(settings)
    assert policy("digits") is True and policy("minilm") is False
    assert enabled_for({"dynamic_batching": "iris, digits", "repository": tmp_path})("iris") is True
    assert enabled_for({"dynamic_batching": "none", "repository": tmp_path})("digits") is False


def test_ray_follows_the_bench_of_ray(tmp_path):
    """Ray's batching goes behind Ray's proxy: only its own rows in the bench decide it."""
    settings = {"dynamic_batching": "auto", "repository": tmp_path}
    (tmp_path / BENCH_FILE).write_text(json.dumps({"recommendations": {"dynamic_batching": {"digits": True}}}))
    assert enabled_for(settings, "ray")("digits") is False  # waitress's verdict is not Ray's
    (tmp_path / BENCH_FILE).write_text(
        json.dumps(
            {
                "recommendations": {
                    "dynamic_batching": {"digits": True},
                    "dynamic_batching_ray": {"digits": False, "minilm": True},
                }
            }
        )
    )
    policy = enabled_for(settings, "ray")
    assert policy("digits") is False and policy("minilm") is True


def test_releasing_an_artifact_stops_its_batcher_thread_and_frees_the_session(tmp_path):
    path = tmp_path / "double.onnx"
    path.write_bytes(doubling_model())
    pool = SessionPool(["CPUExecutionProvider"])
    batcher = pool.batcher("abc", path, "double", window_ms=5, max_batch=8)
    assert batcher.run(["y"], {"x": np.ones((1, 3), np.float32)})["y"].tolist() == [[2.0, 2.0, 2.0]]
    assert pool.batching() == ["abc"]
    session = weakref.ref(pool.get("abc", path, "double"))

    pool.retain(set())
    batcher._thread.join(timeout=10)
    assert not batcher.running(), "the released batcher's thread is still running"
    assert pool.loaded() == [] and pool.batching() == []
    # A request that got the batcher before the release is still answered, without the thread.
    assert batcher.run(["y"], {"x": np.ones((1, 3), np.float32)})["y"].tolist() == [[2.0, 2.0, 2.0]]
    del batcher
    gc.collect()
    assert session() is None, "something still holds the released session"
