"""One line per request, read from a real `onnxport serve`'s output: JSON by default, words with
request_log=text, nothing with off; a 400 that onnxruntime refused carries onnxruntime's message in the
line and no raw `[E:onnxruntime...]` line is printed. What the client sent cannot forge a line nor reach
the terminal raw, long fields are cut, and what waitress refuses itself has its line too."""

from __future__ import annotations

import json
import socket
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
        [helper.make_node("Gather", ["table", "ids"], ["y"], name="lookup")],
        "lookup",
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
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "ids",
                    "shape": [1, len(ids)],
                    "datatype": "INT64",
                    "parameters": {"binary_data_size": len(data)},
                }
            ]
        }
    ).encode()
    return header + data, {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(header)),
    }


def run_requests(repository, tmp_path, form: str | None):
    """Three inference requests (JSON 200, binary 200, JSON 400 from onnxruntime); the server's output after."""
    port = free_port()
    env = {} if form is None else {"ONNXPORT_REQUEST_LOG": form}
    server = start_test_server(
        ["serve", "--repository", str(repository), "--port", str(port)], port, tmp_path / f"server-{form}.log", env=env
    )
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


# A model name that would print a second line (`onnxport: 200 GET forged`) and colour the terminal red.
FORGED = "/v2/models/x%0Aonnxport:%20200%20GET%20forged%1B%5B31m/ready"
LONG_MODEL = "a" * 5000


def exchange(port: int, raw: bytes) -> bytes:
    """Send `raw` on a new connection, read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(raw)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:  # closed with our unread bytes in its buffer: what came is the answer
            pass
    return data


def attacks(repository, tmp_path, form: str) -> str:
    """A forged line and a long path through Flask; a malformed request line, 431 and a body over waitress's
    cap, which waitress answers itself. The server's output after."""
    port = free_port()
    server = start_test_server(
        ["serve", "--repository", str(repository), "--port", str(port)],
        port,
        tmp_path / f"server-{form}.log",
        env={"ONNXPORT_REQUEST_LOG": form, "ONNXPORT_MAX_REQUEST_BYTES": "10000"},
    )
    try:
        answers = [
            exchange(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            for path in (FORGED, f"/v2/models/{LONG_MODEL}/ready")
        ]
        answers.append(exchange(port, b"G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n"))
        answers.append(exchange(port, b"GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 300_000 + b"\r\n\r\n"))
        answers.append(exchange(port, f"POST {INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n".encode()))
    finally:
        server.stop()
    assert [answer.split(b" ", 2)[1] for answer in answers] == [b"404", b"404", b"400", b"431", b"413"], answers
    return server.log()


def test_text_lines_escape_what_the_client_sent_and_cut_long_fields(repository, tmp_path):
    log = attacks(repository, tmp_path, "text")
    assert "\x1b" not in log, "a raw escape code reached the log"
    lines = log.splitlines()
    assert not any(line.startswith("onnxport: 200 GET forged") for line in lines), log[-3000:]
    [forged] = [line for line in lines if "forged" in line]
    assert forged.startswith(
        r"onnxport: 404 GET /v2/models/x\x0aonnxport:\x20200\x20GET\x20forged\x1b[31m/ready "
        r"model=x\x0aonnxport:\x20200\x20GET\x20forged\x1b[31m version=- "
    ), forged
    [long] = [line for line in lines if LONG_MODEL[:100] in line]
    assert f"GET /v2/models/{'a' * (1000 - len('/v2/models/'))}...[+4017 chars] " in long, long[:300]
    assert f"model={'a' * 1000}...[+4000 chars] " in long and len(long) < 3300, long[:300]  # 3 fields of 1000
    # What waitress refused itself: a line each, with `-` where the request line was never read.
    assert any(line.startswith("onnxport: 400 - - in=") and 'error="Bad Request: ' in line for line in lines), log[
        -3000:
    ]
    assert any(
        line.startswith("onnxport: 431 - - in=") and "Request Header Fields Too Large" in line for line in lines
    ), log[-3000:]
    assert any(line.startswith(f"onnxport: 413 POST {INFER} in=") for line in lines), log[-3000:]


def test_json_lines_cut_long_fields_and_log_what_waitress_refused(repository, tmp_path):
    log = attacks(repository, tmp_path, "json")
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    [forged] = [record for record in records if "forged" in (record["path"] or "")]
    assert forged["path"] == "/v2/models/x\nonnxport: 200 GET forged\x1b[31m/ready", forged
    assert forged["model"] == "x\nonnxport: 200 GET forged\x1b[31m", forged
    [long] = [record for record in records if record["model"] and record["model"].startswith("aaa")]
    assert long["model"] == "a" * 1000 + "...[+4000 chars]", long["model"][-30:]
    assert long["path"].endswith("...[+4017 chars]"), long["path"][-30:]
    refused = {record["status"]: record for record in records if record["status"] in (400, 413, 431)}
    assert sorted(refused) == [400, 413, 431], records
    assert (refused[400]["method"], refused[400]["path"]) == (None, None), refused[400]
    assert refused[400]["error"].startswith("Bad Request: "), refused[400]
    assert refused[431]["method"] is None and refused[431]["error"].startswith("Request Header Fields Too Large")
    assert (refused[413]["method"], refused[413]["path"]) == ("POST", INFER), refused[413]
    assert all(record["bytes_out"] > 0 and record["id"] for record in refused.values()), refused
