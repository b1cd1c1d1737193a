"""`onnxport serve --engine ray`: the V2 API on a real local Ray cluster with 2 replicas (serving/ray/engine.py).

The same checks as the waitress server: tritonclient on every served variant (binary and JSON) equal to
a local onnxruntime session, the same errors for the same bad requests (one implementation,
serving/v2/core.py), both replicas answering, Ray's batching under concurrent clients, a replica killed
under load (only what it had in flight is lost; Ray restarts it), and no Ray process left once the
server stops.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from demo_variants import MODEL_VARIANTS
from fixtures.servers import free_port, ray_processes, ray_test_server
from onnxport.serving.v2.protocol import datatype_of

pytestmark = pytest.mark.slow

BAD_REQUESTS = [
    {"inputs": []},
    {"inputs": [{"name": "features", "shape": [1, 4], "datatype": ["FP32"], "data": [1, 2, 3, 4]}]},
    {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [[1], [2], [3], [4]]}]},
    {"id": 1.5, "inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
    {"inputs": [{"name": "sepal", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
]


@pytest.fixture(scope="module")
def ray_server(live_server, tmp_path_factory):
    """Replicas with no repository of their own: they copy the demo repository from a static server's
    /repository/ (every sha256 verified), as nodes without the folder do. Batching is on for every
    model, so that concurrent requests go through Ray's @serve.batch."""
    folder = tmp_path_factory.mktemp("ray")
    args = ["--replicas", "2", "--artifacts-url", f"{live_server}/repository/", "--repository", str(folder / "copy")]
    with ray_test_server(args, folder, {"ONNXPORT_DYNAMIC_BATCHING": "all"}) as server:
        yield server


def post(base_url: str, path: str, body: dict) -> tuple[int, object, dict]:
    request = urllib.request.Request(
        base_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            body = error.read()
        try:
            return error.code, error.headers, json.loads(body)
        except ValueError:  # not ours: Ray's proxy answers a lost replica's requests in text
            return error.code, error.headers, body.decode(errors="replace")


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_tritonclient_on_every_served_variant(ray_server, golden_inputs, reference_outputs, binary):
    import tritonclient.http as httpclient

    triton = httpclient.InferenceServerClient(ray_server.base_url.removeprefix("http://"))
    try:
        for model, variant in MODEL_VARIANTS:
            feeds = golden_inputs(model)
            inputs = []
            for name, value in feeds.items():
                tensor = httpclient.InferInput(name, list(value.shape), httpclient.np_to_triton_dtype(value.dtype))
                tensor.set_data_from_numpy(value, binary_data=binary)
                inputs.append(tensor)
            expected = reference_outputs(model, variant, feeds)
            outputs = [httpclient.InferRequestedOutput(name, binary_data=binary) for name in expected]
            result = triton.infer(model, inputs, model_version=variant, outputs=outputs)
            for name, value in expected.items():
                np.testing.assert_array_equal(result.as_numpy(name), value, err_msg=f"{model} {variant} {name}")
    finally:
        triton.close()


IRIS = {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.9, 3.0, 5.1, 1.8]}]}


def wait_until(condition, timeout: float, what: str) -> None:
    """Poll condition() until it holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.05)


def replicas_answering(base_url: str, requests: int = 40) -> set[str]:
    return {post(base_url, "/v2/models/iris/infer", IRIS)[1].get("X-Onnxport-Replica") for _ in range(requests)}


def two_replicas_answering(base_url: str, also, seconds: float = 120) -> set[str]:
    """The two replicas that answer within `seconds`, where `also(replicas)` holds too."""
    deadline = time.time() + seconds
    now = replicas_answering(base_url)
    while (len(now) < 2 or not also(now)) and time.time() < deadline:
        time.sleep(2)
        now = replicas_answering(base_url)
    assert len(now) == 2 and also(now), f"two replicas did not answer within {seconds:.0f} s: {now}"
    return now


def test_both_replicas_answer(ray_server):
    assert len(replicas_answering(ray_server.base_url)) == 2


def test_concurrent_requests_batched_by_ray_are_each_answered_right(ray_server, golden_inputs, reference_outputs):
    """16 clients at once on digits: Ray's @serve.batch joins them; each gets its own rows back."""
    rows = golden_inputs("digits")
    name, values = next(iter(rows.items()))
    expected = reference_outputs("digits", "fp32", rows)
    results: dict[int, tuple[int, object]] = {}

    def client(index: int) -> None:
        row = values[index % len(values)][None]
        body = {
            "inputs": [
                {"name": name, "shape": list(row.shape), "datatype": datatype_of(row), "data": row.ravel().tolist()}
            ]
        }
        results[index] = post(ray_server.base_url, "/v2/models/digits/infer", body)[::2]

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, (status, reply) in sorted(results.items()):
        assert status == 200, reply
        for output in reply["outputs"]:
            want = expected[output["name"]][index % len(values)]
            np.testing.assert_allclose(np.array(output["data"]).reshape(want.shape), want, rtol=1e-5, atol=1e-6)


def test_one_route_table_the_files_the_web_app_and_their_headers_as_on_waitress(ray_server, demo_app):
    """Each replica mounts the waitress server's own Flask app: the same routes answer, with the same
    isolation headers, and a cross-origin write is refused as there."""
    for path in ("/", "/repository/manifest.json", "/web/lib/index.js", "/v2/openapi.json"):
        flask = demo_app.test_client().get(path)
        flask.close()  # a static file's: only its headers are compared
        with urllib.request.urlopen(ray_server.base_url + path, timeout=60) as response:
            assert (response.status, response.headers["Content-Type"]) == (200, flask.headers["Content-Type"]), path
            assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp", path
    request = urllib.request.Request(
        ray_server.base_url + "/v2/models/iris/infer",
        data=b"{}",
        method="POST",
        headers={"Content-Type": "application/json", "Origin": "https://elsewhere.example"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    assert refused.value.code == 403 and "elsewhere.example" in json.loads(refused.value.read())["error"]


@pytest.mark.parametrize("body", BAD_REQUESTS)
def test_the_same_errors_as_the_flask_server(ray_server, demo_app, body):
    status, headers, error = post(ray_server.base_url, "/v2/models/iris/infer", body)
    flask = demo_app.test_client().post("/v2/models/iris/infer", data=json.dumps(body), content_type="application/json")
    assert (status, error) == (flask.status_code, flask.json)
    assert 400 <= status < 500 and list(error) == ["error"] and headers.get("Content-Type") == "application/json"


def test_a_replica_killed_under_load_loses_only_its_requests_in_flight(ray_server):
    """16 clients on iris; one replica's process is SIGKILLed. Every lost request was sent before the
    kill and not answered by then (in flight), at most the 16 clients' one each; Ray starts a new
    replica and two answer again. Runs last: it changes the cluster."""
    # A replica may be restarting when this starts (Ray restarts one whose health check a loaded
    # machine made late), so wait for two, as at the end.
    before = two_replicas_answering(ray_server.base_url, lambda now: True)
    victim = min(before)
    killed_at: list[float] = []
    stop = threading.Event()
    answered, lost = [], []  # (sent, answered or failed, replica or error)
    answers_per_client = [0] * 16
    lock = threading.Lock()

    def client(index: int) -> None:
        while not stop.is_set():
            sent = time.perf_counter()
            try:
                status, headers, reply = post(ray_server.base_url, "/v2/models/iris/infer", IRIS)
                ok = status == 200
                outcome = (
                    sent,
                    time.perf_counter(),
                    headers.get("X-Onnxport-Replica") if ok else f"HTTP {status}: {reply}",
                )
            except (OSError, ValueError) as exc:  # a dropped connection, a body that is not JSON
                ok, outcome = False, (sent, time.perf_counter(), repr(exc))
            with lock:
                (answered if ok else lost).append(outcome)
                if ok:
                    answers_per_client[index] += 1

    def answered_after(moment: float) -> int:
        with lock:
            return sum(1 for a in answered if a[0] > moment)

    threads = [threading.Thread(target=client, args=(index,)) for index in range(16)]
    for thread in threads:
        thread.start()
    try:
        # Under load: every client has been answered once, so each has a request in flight from now on.
        wait_until(lambda: all(answers_per_client), 60, "an answer to each of the 16 clients")
        killed_at.append(time.perf_counter())
        os.kill(int(victim.rsplit(":", 1)[1]), signal.SIGKILL)
        # Past the kill: a round of requests sent over a second after it answered, which is where the
        # killed replica must not show up (and where a request lost after the kill would be).
        wait_until(lambda: answered_after(killed_at[0] + 1) >= 16, 60, "16 answers to requests sent after the kill")
    finally:
        stop.set()
        for thread in threads:
            thread.join()

    in_flight_at_kill = [a for a in answered + lost if a[0] < killed_at[0] < a[1]]
    print(
        f"\n{len(answered)} answered, {len(lost)} lost, {len(in_flight_at_kill)} in flight at the kill; lost: "
        f"{sorted({reason for _, _, reason in lost})}"
    )
    assert answered, "no request answered under load"
    assert all(sent < killed_at[0] for sent, _, _ in lost), "a request sent after the kill was lost"
    assert len(lost) <= 16
    assert not [a for a in answered if a[0] > killed_at[0] + 1 and a[2] == victim], "the killed replica answered"

    killed = time.time() - (time.perf_counter() - killed_at[0])
    two_replicas_answering(ray_server.base_url, lambda now: victim not in now)
    print(f"two replicas answer again {time.time() - killed:.1f} s after the kill")


def test_an_unreachable_artifacts_url_is_one_line_before_any_cluster_starts(run_cli, assert_one_line_error, tmp_path):
    url = f"http://127.0.0.1:{free_port()}/repository/"
    running = ray_processes()  # the module's cluster, when its fixture is up
    code, _, err = run_cli(
        "serve", "--engine", "ray", "--artifacts-url", url, "--repository", tmp_path / "copy", "--port", free_port()
    )
    assert code == 1
    assert_one_line_error(err, url, "manifest.json", "cannot connect")
    assert ray_processes() == running
