"""What waitress answers itself, before any application sees the request, over a raw socket: JSON too.

A malformed request line, a duplicated Content-Length, and a body over waitress's own cap (set a
megabyte above max_request_bytes) get {"error": ...} from serving/serve.py's hook, and a body between
the two caps gets the app's own 413. The server keeps serving after each.
"""

from __future__ import annotations

import json
import select
import socket
from urllib.parse import urlsplit

import pytest

from fixtures.servers import free_port

LIMIT = 10_000  # max_request_bytes of the server under test


@pytest.fixture
def small_server(spawn_server, demo_repository):
    port = free_port()
    return spawn_server(["serve", "--repository", str(demo_repository), "--port", str(port)], port,
                        env={"ONNXPORT_MAX_REQUEST_BYTES": str(LIMIT)})


def exchange(base_url: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read one response: (status, headers with lower-case names, body)."""
    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        # In pieces, stopping once the server answers: it may refuse a body before it has all of it.
        for start in range(0, len(raw), 65536):
            if select.select([connection], [], [], 0)[0]:
                break
            connection.sendall(raw[start:start + 65536])
        else:
            connection.shutdown(socket.SHUT_WR)
        data = b""
        try:
            while chunk := connection.recv(65536):
                data += chunk
        except ConnectionResetError:  # closed with our unread bytes in its buffer: what came is the answer
            pass
    assert data, "the server closed the connection without an answer"
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def assert_json(status: int, headers: dict, body: bytes, expected: int, *fragments: str) -> None:
    assert status == expected, body[:300]
    assert headers["content-type"].split(";")[0] == "application/json", headers
    error = json.loads(body)
    assert list(error) == ["error"] and error["error"], error
    for fragment in fragments:
        assert fragment in error["error"], error


def post(path: str, body: bytes, *extra: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: x", "Content-Type: application/json", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def still_serving(base_url: str) -> None:
    status, _, body = exchange(base_url, b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 200 and json.loads(body) == {"live": True}


IRIS = json.dumps({"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32",
                               "data": [5.9, 3.0, 5.1, 1.8]}]}).encode()


def test_a_malformed_request_line(small_server):
    assert_json(*exchange(small_server, b"G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n"), 400, "Bad Request")
    still_serving(small_server)


def test_a_duplicated_content_length(small_server):
    raw = post("/v2/models/iris/infer", IRIS, f"Content-Length: {len(IRIS)}", f"Content-Length: {len(IRIS) + 1}")
    assert_json(*exchange(small_server, raw), 400, "Bad Request")
    still_serving(small_server)


def test_a_body_between_the_two_caps_gets_the_apps_413(small_server):
    body = b" " * (LIMIT + 100) + IRIS
    assert_json(*exchange(small_server, post("/v2/models/iris/infer", body, f"Content-Length: {len(body)}")), 413,
                "too large")
    still_serving(small_server)


def test_a_declared_length_over_waitress_cap(small_server):
    raw = post("/v2/models/iris/infer", b"", f"Content-Length: {LIMIT + 2 * 1024 * 1024}")
    assert_json(*exchange(small_server, raw), 413, "Request Entity Too Large")
    still_serving(small_server)


def test_a_chunked_body_over_waitress_cap(small_server):
    chunk = b" " * 65536
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range((LIMIT + 2 * 1024 * 1024) // len(chunk) + 1))
    raw = post("/v2/models/iris/infer", chunks + b"0\r\n\r\n", "Transfer-Encoding: chunked")
    assert_json(*exchange(small_server, raw), 413, "Request Entity Too Large")
    still_serving(small_server)


def test_a_small_chunked_body_is_answered(small_server):
    raw = post("/v2/models/iris/infer", b"%x\r\n%s\r\n0\r\n\r\n" % (len(IRIS), IRIS), "Transfer-Encoding: chunked",
               "Connection: close")
    status, _, body = exchange(small_server, raw)
    assert status == 200 and json.loads(body)["outputs"], body[:300]
