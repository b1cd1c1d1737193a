"""What waitress answers itself, before any application sees the request, over a raw socket: JSON too.

A malformed request line, a duplicated Content-Length, and a body over waitress's own cap (set a
megabyte above max_request_bytes) get {"error": ...} from serving/waitress/serve.py's hook, and a body between
the two caps gets the app's own 413. The server keeps serving after each.

And the framings serving/waitress/framing.py refuses (a length given two ways, a missing Host, a Transfer-Encoding
other than one final chunked, obs-fold, chunk lines and trailers without end): one answer, then the
connection is closed, so a request smuggled after it is never answered.
"""

from __future__ import annotations

import json
import select
import socket
from urllib.parse import urlsplit

import pytest
from relu_server import relu_repository, relu_server  # noqa: F401 - fixtures

from fixtures.servers import free_port

LIMIT = 10_000  # max_request_bytes of the server under test


@pytest.fixture
def small_server(spawn_server, demo_repository):
    port = free_port()
    return spawn_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)],
        port,
        env={"ONNXPORT_MAX_REQUEST_BYTES": str(LIMIT)},
    )


def exchange(base_url: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read one response: (status, headers with lower-case names, body)."""
    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        # In pieces, stopping once the server answers: it may refuse a body before it has all of it.
        for start in range(0, len(raw), 65536):
            if select.select([connection], [], [], 0)[0]:
                break
            connection.sendall(raw[start : start + 65536])
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


IRIS = json.dumps(
    {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.9, 3.0, 5.1, 1.8]}]}
).encode()


def test_a_malformed_request_line(small_server):
    assert_json(*exchange(small_server, b"G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n"), 400, "Bad Request")
    still_serving(small_server)


def test_a_duplicated_content_length(small_server):
    raw = post("/v2/models/iris/infer", IRIS, f"Content-Length: {len(IRIS)}", f"Content-Length: {len(IRIS) + 1}")
    assert_json(*exchange(small_server, raw), 400, "Bad Request")
    still_serving(small_server)


def test_a_body_between_the_two_caps_gets_the_apps_413(small_server):
    body = b" " * (LIMIT + 100) + IRIS
    assert_json(
        *exchange(small_server, post("/v2/models/iris/infer", body, f"Content-Length: {len(body)}")), 413, "too large"
    )
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
    raw = post(
        "/v2/models/iris/infer",
        b"%x\r\n%s\r\n0\r\n\r\n" % (len(IRIS), IRIS),
        "Transfer-Encoding: chunked",
        "Connection: close",
    )
    status, _, body = exchange(small_server, raw)
    assert status == 200 and json.loads(body)["outputs"], body[:300]


# Framing that a proxy in front may read otherwise (serving/waitress/framing.py): each is refused with one answer
# and the connection closed, so a request smuggled after it is never answered. These run on a one-model server.

SMUGGLED = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"


def chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


def relu_post(*headers: str, version: str = "1.1") -> bytes:
    return (f"POST /v2/models/relu/infer HTTP/{version}\r\n" + "".join(f"{h}\r\n" for h in headers) + "\r\n").encode()


def conversation(base_url: str, raw: bytes, quiet: float = 3.0) -> tuple[list[tuple[int, dict, bytes]], bool]:
    """Send raw bytes, read until the server closes or says nothing for `quiet` seconds:
    (each answer's status, headers with lower-case names and body; whether the server closed)."""
    address = urlsplit(base_url)
    data, closed = b"", False
    with socket.create_connection((address.hostname, address.port), timeout=quiet) as connection:
        try:
            for start in range(0, len(raw), 65536):  # stop sending once the server answers
                if select.select([connection], [], [], 0)[0]:
                    break
                connection.sendall(raw[start : start + 65536])
        except OSError:  # closed on us mid-send: what came is the answer
            pass
        try:
            while chunk := connection.recv(65536):
                data += chunk
            closed = True
        except TimeoutError:
            pass
        except ConnectionResetError:
            closed = True
    answers = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:] if ": " in line)}
        length = int(headers.get("content-length", len(rest)))
        answers.append((int(lines[0].split()[1]), headers, rest[:length]))
        data = rest[length:]
    return answers, closed


RELU = b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, -2, 3, -4]}]}'
CL = f"Content-Length: {len(chunked(RELU))}"
TE = "Transfer-Encoding: chunked"
JSON = "Content-Type: application/json"

# name: (raw request with a smuggled one after it, status, a fragment of the error)
REFUSED = {
    "Content-Length with Transfer-Encoding": (
        relu_post("Host: x", JSON, CL, TE) + chunked(RELU) + SMUGGLED,
        400,
        "gives both",
    ),
    "Transfer-Encoding before Content-Length": (
        relu_post("Host: x", TE, "Content-Length: 4") + chunked(RELU) + SMUGGLED,
        400,
        "gives both",
    ),
    "no Host on HTTP/1.1": (relu_post(JSON, f"Content-Length: {len(RELU)}") + RELU + SMUGGLED, 400, "Host"),
    "two Host headers": (
        relu_post("Host: a", "Host: b", f"Content-Length: {len(RELU)}") + RELU + SMUGGLED,
        400,
        "has 2",
    ),
    "chunked, identity": (
        relu_post("Host: x", "Transfer-Encoding: chunked, identity") + chunked(RELU) + SMUGGLED,
        400,
        "last coding must be chunked",
    ),
    "gzip": (relu_post("Host: x", "Transfer-Encoding: gzip") + chunked(RELU) + SMUGGLED, 400, "last coding"),
    "xchunked": (relu_post("Host: x", "Transfer-Encoding: xchunked") + chunked(RELU) + SMUGGLED, 400, "last coding"),
    "gzip, chunked": (
        relu_post("Host: x", "Transfer-Encoding: gzip, chunked") + chunked(RELU) + SMUGGLED,
        501,
        "only chunked",
    ),
    "chunked in two fields": (relu_post("Host: x", TE, TE) + chunked(RELU) + SMUGGLED, 400, "applied once"),
    "obs-fold": (relu_post("Host: x", "Transfer-Encoding:", " chunked") + chunked(RELU) + SMUGGLED, 400, "folding"),
    "Transfer-Encoding on HTTP/1.0": (
        relu_post("Host: x", TE, "Connection: keep-alive", version="1.0") + chunked(RELU) + SMUGGLED,
        400,
        "needs HTTP/1.1",
    ),
    "Transfer-Encoding on HTTP/1.2": (
        relu_post("Host: x", TE, version="1.2") + chunked(RELU) + SMUGGLED,
        400,
        "needs HTTP/1.1",
    ),
    "a chunk-size of 5000 hex digits": (
        relu_post("Host: x", TE) + b"0" * 4990 + b"%x\r\n%s\r\n0\r\n\r\n" % (len(RELU), RELU) + SMUGGLED,
        400,
        "hex digits",
    ),
    "a chunk over the body cap": (relu_post("Host: x", TE) + b"ffffffff\r\n" + b"a" * 1000, 413, "max_body"),
    "a chunk extension that never ends": (relu_post("Host: x", TE) + b"10;" + b"a" * 300_000, 400, "chunk line"),
    "a trailer that never ends": (relu_post("Host: x", TE) + b"0\r\nX-A: " + b"a" * 300_000, 400, "trailer"),
    "a Content-Length of 5000 digits": (relu_post("Host: x", "Content-Length: " + "9" * 5000) + RELU, 413, "digits"),
    "a request target that is no URI": (b"GET http://[/ HTTP/1.1\r\nHost: x\r\n\r\n" + SMUGGLED, 400, "URI"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_a_framing_a_proxy_may_read_otherwise_is_refused_and_the_connection_closed(relu_server, name):  # noqa: F811
    raw, status, fragment = REFUSED[name]
    answers, closed = conversation(relu_server, raw)
    assert [answer[0] for answer in answers] == [status], answers
    assert_json(*answers[0], status, fragment)
    assert closed, "the connection stayed open after the refusal"
    still_serving(relu_server)


def test_lenient_spellings_rfc_9112_allows_are_read_as_written(relu_server):  # noqa: F811
    """Whitespace around a field value, chunk extensions, a trailer, and a pipelined request after them."""
    body = b"".join(b"%x;part=%d\r\n%s\r\n" % (len(piece), i, piece) for i, piece in enumerate([RELU[:30], RELU[30:]]))
    raw = (
        relu_post("Host: x", JSON, "Transfer-Encoding:   chunked  ")
        + body
        + b"0\r\nX-Checksum: none\r\n\r\n"
        + b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    answers, closed = conversation(relu_server, raw)
    assert [answer[0] for answer in answers] == [200, 200], answers
    assert json.loads(answers[0][2])["outputs"][0]["data"] == [1.0, 0.0, 3.0, 0.0]
    assert closed


def test_a_space_before_the_colon_is_refused(relu_server):  # noqa: F811
    raw = relu_post("Host: x", "Transfer-Encoding : chunked") + chunked(RELU) + SMUGGLED
    answers, closed = conversation(relu_server, raw)
    assert [answer[0] for answer in answers] == [400] and closed, answers
