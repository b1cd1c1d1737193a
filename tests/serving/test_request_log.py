"""One line per request, read from a real `onnxport serve`'s output: JSON by default, words with
request_log=text, nothing with off; a 400 that onnxruntime refused carries onnxruntime's message in the
line and no raw `[E:onnxruntime...]` line is printed."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fixtures.servers import start_test_server
from onnxport.harness.process import free_port

INFER = "/v2/models/lookup/infer"


def lookup_model() -> onnx.ModelProto:
    """y = table[ids]: a 4-row table, so an id past 3 is onnxruntime's INVALID_ARGUMENT (our checks pass it)."""
    table = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(4, 2), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["y"], name="lookup")], "lookup",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 2])],
        [table],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture
def repository(imported_repository):
    return imported_repository(lookup_model(), "lookup")


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        with error:
            error.read()
            return error.code, dict(error.headers)


def json_body(ids: list[int]) -> bytes:
    return json.dumps({"inputs": [{"name": "ids", "shape": [1, len(ids)], "datatype": "INT64", "data": ids}]}).encode()


def binary_body(ids: list[int]) -> tuple[bytes, dict[str, str]]:
    data = np.array(ids, dtype="<i8").tobytes()
    header = json.dumps({"inputs": [{"name": "ids", "shape": [1, len(ids)], "datatype": "INT64",
                                     "parameters": {"binary_data_size": len(data)}}]}).encode()
    return header + data, {"Content-Type": "application/octet-stream",
                           "Inference-Header-Content-Length": str(len(header))}


def run_requests(repository, tmp_path, form: str | None):
    """Three inference requests (JSON 200, binary 200, JSON 400 from onnxruntime); the server's output after."""
    port = free_port()
    env = {} if form is None else {"ONNXPORT_REQUEST_LOG": form}
    server = start_test_server(["serve", "--repository", str(repository), "--port", str(port)], port,
                               tmp_path / f"server-{form}.log", env=env)
    try:
        ok = post(server.base_url + INFER, json_body([0, 3]), {"Content-Type": "application/json"})
        body, headers = binary_body([1, 2])
        binary = post(server.base_url + INFER, body, headers)
        refused = post(server.base_url + INFER, json_body([1, 10]), {"Content-Type": "application/json"})
    finally:
        server.stop()
    return [ok, binary, refused], server.log(), len(body)


def test_json_lines_by_default(repository, tmp_path):
    answers, log, binary_size = run_requests(repository, tmp_path, None)
    assert [status for status, _ in answers] == [200, 200, 400]
    assert "[E:" not in log, log  # onnxruntime's logger stays quiet: the line carries its message
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{") and INFER in line]
    assert len(lines) == 3, log
    assert [line["id"] for line in lines] == [headers["X-Request-Id"] for _, headers in answers]
    for line in lines:
        assert line["model"] == "lookup" and line["version"] is None and line["method"] == "POST"
        assert line["bytes_in"] > 0 and line["bytes_out"] > 0 and line["ms"] >= 0
    assert [(line["protocol"], line["status"]) for line in lines] == [("json", 200), ("binary", 200), ("json", 400)]
    assert lines[1]["bytes_in"] == binary_size
    assert "error" not in lines[0] and "error" not in lines[1]
    assert "onnxruntime says" in lines[2]["error"] and "out of data bounds" in lines[2]["error"]
    # The readiness probe's request has its line too: one line per request, not only inference.
    assert any(json.loads(line)["path"] == "/v2/health/ready" for line in log.splitlines() if line.startswith("{"))


def test_text_lines_and_off(repository, tmp_path):
    _, log, _ = run_requests(repository, tmp_path, "text")
    lines = [line for line in log.splitlines() if INFER in line]
    assert len(lines) == 3, log
    assert lines[0].startswith(f"onnxport: 200 POST {INFER} model=lookup version=- json in=")
    assert " binary " in lines[1]
    assert lines[2].startswith("onnxport: 400 ") and "out of data bounds" in lines[2] and "[E:" not in log

    answers, log, _ = run_requests(repository, tmp_path, "off")
    assert [status for status, _ in answers] == [200, 200, 400]
    assert INFER not in log and "[E:" not in log, log
