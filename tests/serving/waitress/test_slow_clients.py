"""Slow clients against a real `onnxport serve` (serving/waitress/connections.py): hundreds of idle or trickling
connections starve no one, a request head or body that does not arrive whole in time is cut with a 408
and a log line, an idle kept-alive connection is closed, and a request read whole is never cut.

Before: waitress's defaults (100 connections, one 120 s inactivity timeout that a byte a second resets)
left a normal client unanswered for 200 s (the measurement's timeout) behind 200 idle and 20 trickling
connections.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import urllib.request

import pytest
from onnx import TensorProto, helper

from fixtures.servers import start_test_server
from onnxport.harness.process import ServerProcess, free_port

INFER = "/v2/models/spin/infer"


def spin_model():
    """total = n additions of 1 in a Loop: about 2 us an iteration, so `n` sets how long a request runs."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "one"], ["acc_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Squeeze", ["n"], ["count"]),
            helper.make_node("Loop", ["count", "", "zero"], ["total"], body=body),
        ],
        "spin",
        [helper.make_tensor_value_info("n", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, [1])],
        [helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def infer_body(n: int) -> bytes:
    return json.dumps({"inputs": [{"name": "n", "shape": [1], "datatype": "INT64", "data": [n]}]}).encode()


def infer_request(n: int) -> bytes:
    body = infer_body(n)
    return (
        f"POST {INFER} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


@pytest.fixture
def server(imported_repository, tmp_path):
    """server(**settings) -> a real `onnxport serve` on the spin model, with ONNXPORT_<SETTING> for each."""
    started: list[ServerProcess] = []

    def start(**settings) -> ServerProcess:
        repository = imported_repository(spin_model(), "spin")
        port = free_port()
        env = {f"ONNXPORT_{name.upper()}": str(value) for name, value in settings.items()}
        started.append(
            start_test_server(
                ["serve", "--repository", str(repository), "--port", str(port)], port, tmp_path / "server.log", env=env
            )
        )
        return started[-1]

    yield start
    for process in started:
        process.stop()


def port_of(server: ServerProcess) -> int:
    return int(server.base_url.rstrip("/").rsplit(":", 1)[1])


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def closed_after(
    sock: socket.socket, started: float, trickle: bytes = b"", every: float = 0.2, limit: float = 30
) -> tuple[float, bytes]:
    """Send `trickle` a byte every `every` s (nothing if empty) until the server closes `sock`: (seconds from
    `started` to the close, what the server sent). A reset counts as a close too."""
    received, position = b"", 0
    while time.monotonic() - started < limit:
        if select.select([sock], [], [], every)[0]:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                return time.monotonic() - started, received
            if not chunk:
                return time.monotonic() - started, received
            received += chunk
        elif position < len(trickle):
            try:
                sock.send(trickle[position : position + 1])
            except OSError:
                return time.monotonic() - started, received
            position += 1
    pytest.fail(f"the server kept the connection open for {limit} s")


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One HTTP response with a Content-Length from `sock`: (status, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a whole head: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = int(next(line.split(":", 1)[1] for line in lines if line.lower().startswith("content-length:")))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a whole body: {head!r}"
        body += chunk
    return int(lines[0].split()[1]), body


def log_lines(server: ServerProcess, status: int) -> list[dict]:
    return [
        record
        for line in server.log().splitlines()
        if line.startswith("{")
        if (record := json.loads(line))["status"] == status
    ]


def logged(server: ServerProcess, status: int, timeout: float = 10) -> list[dict]:
    """The log lines of `status`, once there is one: the server writes a cut connection's line after closing it."""
    deadline = time.monotonic() + timeout
    while not (lines := log_lines(server, status)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return lines


def test_a_normal_client_is_answered_while_200_idle_and_20_trickling_connections_are_open(server):
    process = server()  # the defaults
    port = port_of(process)
    idle = [connect(port) for _ in range(200)]
    trickling = [connect(port) for _ in range(20)]
    stop = threading.Event()

    def trickle() -> None:  # a header byte a second on each, as a slowloris client does
        head = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
        for byte in head:
            for sock in trickling:
                try:
                    sock.send(bytes([byte]))
                except OSError:
                    pass
            if stop.wait(1):
                return

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        time.sleep(2.5)  # every trickler has sent bytes, and would have been reset by an inactivity timeout
        started = time.perf_counter()
        request = urllib.request.Request(
            process.base_url.rstrip("/") + INFER, data=infer_body(3), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            status, answer = response.status, json.loads(response.read())
        took = time.perf_counter() - started
    finally:
        stop.set()
        thread.join(timeout=5)
        for sock in idle + trickling:
            sock.close()
    print(f"\n200 idle + 20 trickling connections open: a normal client's inference answered in {took * 1000:.0f} ms")
    assert status == 200 and answer["outputs"][0]["data"] == [3.0], answer
    assert took < 2.0, f"a normal client waited {took:.2f} s"


def test_a_trickling_head_and_a_silent_connection_are_cut_at_header_timeout(server):
    process = server(header_timeout=2, idle_timeout=30)
    port = port_of(process)
    trickler, silent = connect(port), connect(port)
    started = time.monotonic()
    results: dict[str, tuple[float, bytes]] = {}
    thread = threading.Thread(target=lambda: results.update(silent=closed_after(silent, started)))
    thread.start()
    # A byte every 0.2 s: no inactivity timeout would ever fire, only the deadline on the whole head.
    head = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 500
    results["trickler"] = closed_after(trickler, started, head)
    thread.join(timeout=40)
    trickler.close()
    silent.close()
    print(
        f"\nheader_timeout 2 s: trickler closed after {results['trickler'][0]:.2f} s, "
        f"silent connection after {results['silent'][0]:.2f} s"
    )
    for name, (seconds, received) in results.items():
        assert 1.9 <= seconds <= 6, f"{name} closed after {seconds:.2f} s"
    assert results["silent"][1].startswith(b"HTTP/1.1 408 "), results["silent"][1]
    assert b"header_timeout" in results["silent"][1]
    lines = logged(process, 408)
    assert len(lines) == 2 and all("(header_timeout)" in line["error"] for line in lines), process.log(3000)
    assert any(line["error"].endswith(": 0 bytes came") for line in lines), lines


def test_a_trickling_body_is_cut_at_body_timeout(server):
    process = server(body_timeout=2, header_timeout=30)
    sock = connect(port_of(process))
    sock.sendall(
        f"POST {INFER} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n".encode()
    )
    started = time.monotonic()
    seconds, received = closed_after(sock, started, b"[" * 1000)
    sock.close()
    print(f"\nbody_timeout 2 s: a body trickled a byte per 0.2 s was cut after {seconds:.2f} s")
    assert 1.9 <= seconds <= 6, f"closed after {seconds:.2f} s"
    [line] = logged(process, 408)
    assert (line["method"], line["path"]) == ("POST", INFER), line
    assert "(body_timeout)" in line["error"] and " of 1000 bytes came" in line["error"], line


def test_an_idle_keep_alive_connection_is_closed_after_idle_timeout_and_a_busy_one_is_not(server):
    process = server(idle_timeout=2)
    port = port_of(process)
    busy, idle = connect(port), connect(port)
    idle.sendall(infer_request(1))
    assert read_response(idle)[0] == 200
    started = time.monotonic()
    results: dict[str, float] = {}
    thread = threading.Thread(target=lambda: results.update(idle=closed_after(idle, started)[0]))
    thread.start()
    # The other connection asks again every second, five times past the idle timeout, on the same socket.
    for _ in range(5):
        busy.sendall(infer_request(1))
        assert read_response(busy)[0] == 200
        time.sleep(1)
    thread.join(timeout=40)
    busy.sendall(infer_request(1))
    assert read_response(busy)[0] == 200
    busy.close()
    idle.close()
    print(
        f"\nidle_timeout 2 s: the idle kept-alive connection closed after {results['idle']:.2f} s; "
        f"the busy one served 6 requests over {time.monotonic() - started:.1f} s"
    )
    assert 1.9 <= results["idle"] <= 6, f"closed after {results['idle']:.2f} s"
    assert not log_lines(process, 408), "an idle close is not a timeout of a request"


def test_a_request_read_whole_is_never_cut_nor_the_one_pipelined_behind_it(server):
    # header_timeout 2 s: the pipelined head's clock starts when the first request is done, and on a
    # loaded 2-core machine this client took over a second to read the answer and send the head's end.
    process = server(header_timeout=2, body_timeout=1, idle_timeout=1)
    # A request that runs well past every deadline, and the head of the next one in the same packet: its
    # clock waits while the first is held.
    with connect(port_of(process)) as sock:
        started = time.monotonic()
        sock.sendall(infer_request(6_000_000) + b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n")
        status, body = read_response(sock)
        ran = time.monotonic() - started
        sock.sendall(b"\r\n")
        second = read_response(sock)
    print(f"\nevery timeout 1-2 s: a request that ran {ran:.2f} s was answered, then the one pipelined behind it")
    assert status == 200 and json.loads(body)["outputs"][0]["data"] == [6_000_000.0], body[:300]
    assert ran > 2.5, f"the request ran only {ran:.2f} s: not past the deadlines, so this proves nothing"
    assert second[0] == 200, second
    assert not log_lines(process, 408), process.log(3000)


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("max_connections", "1000", 1000),
        ("idle_timeout", "2.5", 2.5),
        ("header_timeout", "10", 10.0),
        ("body_timeout", "60", 60.0),
    ],
)
def test_the_settings_parse(name, text, expected):
    from onnxport.serving import config

    assert config.load(environ={f"ONNXPORT_{name.upper()}": text})[name] == expected


@pytest.mark.parametrize(
    "name, value, rule",
    [
        ("max_connections", "0", "expected a whole number of connections, 1 or more"),
        ("max_connections", "many", "expected a whole number of connections, 1 or more"),
        ("idle_timeout", "0", "expected a number of seconds above 0"),
        ("header_timeout", "-1", "expected a number of seconds above 0"),
        ("body_timeout", "soon", "expected a number of seconds above 0"),
    ],
)
def test_the_settings_refuse_what_does_not_fit(name, value, rule):
    from onnxport.serving import config

    with pytest.raises(config.ConfigError, match=f"{name}: {rule}"):
        config.load(environ={f"ONNXPORT_{name.upper()}": value})
