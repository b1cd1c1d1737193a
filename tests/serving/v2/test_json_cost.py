"""JSON bodies built to cost the server far more than their size, sent to a real `onnxport serve` as an outsider
would: each is refused with a 4xx naming the budget before it is parsed, the server's peak memory (VmHWM) barely
moves, and the next request is answered."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

import onnx
import pytest
from onnx import TensorProto, helper

from fixtures.servers import free_port, start_test_server

ROW = {"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}


def peak_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def post(base_url: str, body: bytes) -> tuple[int, dict, float]:
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    started = time.perf_counter()
    connection.request("POST", "/v2/models/sum/infer", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    return response.status, answer, time.perf_counter() - started


def sum_model() -> onnx.ModelProto:
    """x [n, 4] -> y, its rows summed: one input, one output."""
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
        "sum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [1])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture
def server(imported_repository, tmp_path):
    repository = imported_repository(sum_model(), "sum")
    port = free_port()
    process = start_test_server(
        ["serve", "--repository", str(repository), "--port", str(port)],
        port,
        tmp_path / "server.log",
        env={"ONNXPORT_REQUEST_LOG": "off"},
    )
    status, body, _ = post(process.base_url, json.dumps({"inputs": [ROW]}).encode())
    assert status == 200 and body["outputs"][0]["data"] == pytest.approx([10.2]), body
    yield process
    process.stop()


def many_keys(count: int) -> bytes:
    return b",".join(b'"k%d":0' % index for index in range(count))


@pytest.mark.parametrize(
    "attack, body",
    [
        ("one object of 4M keys (51 MB)", lambda: b"{" + many_keys(4_000_000) + b"}"),
        (
            "1M keys in parameters (12 MB)",
            lambda: b'{"inputs": [' + json.dumps(ROW).encode() + b'], "parameters": {' + many_keys(1_000_000) + b"}}",
        ),
    ],
)
def test_a_body_of_millions_of_keys_is_refused_before_it_is_parsed(server, attack, body):
    # Before: a 400 after 44.7 s with 3.2 GB more at the peak (4M keys); 11.9 s and 1.08 GB (1M in parameters).
    payload = body()
    pid = server.process.pid
    before = peak_mb(pid)
    status, answer, seconds = post(server.base_url, payload)
    grew = peak_mb(pid) - before
    print(f"\n{attack}: {status} in {seconds:.2f} s (the upload included), peak memory +{grew:.1f} MB")
    assert status == 400, answer
    assert answer["error"].startswith("the request holds more than 28 JSON keys by byte "), answer
    assert answer["error"].endswith("a request for model 'sum' (1 input, 1 output) needs at most 14"), answer
    assert seconds < 10 and grew < 100, (seconds, grew)
    status, answer, _ = post(server.base_url, json.dumps({"inputs": [ROW]}).encode())
    assert status == 200 and answer["outputs"][0]["data"] == pytest.approx([10.2]), answer


def test_a_million_strings_for_a_model_that_takes_no_text_are_refused_as_they_come(server):
    payload = json.dumps({"inputs": [{**ROW, "shape": [250_000, 4], "data": ["0.5"] * 1_000_000}]}).encode()
    pid = server.process.pid
    before = peak_mb(pid)
    status, answer, seconds = post(server.base_url, payload)
    grew = peak_mb(pid) - before
    print(f"\n1M strings as FP32 data: {status} in {seconds:.2f} s, peak memory +{grew:.1f} MB")
    assert status == 413 and "setting max_json_string_bytes" in answer["error"], answer
    assert grew < 100, grew


def test_a_million_floats_still_go_through(server):
    rows = [[0.25, 0.5, 1.0, 2.0]] * 250_000
    status, answer, seconds = post(
        server.base_url, json.dumps({"inputs": [{**ROW, "shape": [len(rows), 4], "data": rows}]}).encode()
    )
    print(f"\n1M floats (250,000 rows of 4): {status} in {seconds:.2f} s")
    assert status == 200 and answer["outputs"][0]["data"][:2] == [3.75, 3.75], answer


def test_a_fleet_report_of_many_keys_is_refused_before_it_is_parsed(imported_repository):
    from fixtures.servers import buffered_client
    from onnxport.serving.app import create_app

    app = create_app(
        {"repository": imported_repository(sum_model(), "sum"), "request_log": "off", "fleet_db": ":memory:"}
    )
    body = b"{" + many_keys(1_500) + b"}"  # 15.7 KB, under the report's 16 KiB
    response = buffered_client(app).post("/api/fleet/reports", data=body, content_type="application/json")
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"].startswith(
        "the body is not a report: its JSON has more than 244 keys by byte "
    ), response.get_json()
