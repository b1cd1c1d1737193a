"""A clean drain (serving/waitress/drain.py): SIGTERM under 16 concurrent clients, on a real `onnxport serve`.

What "accepted" means here, from the client's side: a connection whose connect() succeeded. Every request
sent on one must get a whole answer below 500: a reset, an early EOF, a timeout or a 5xx fails the test,
on a fresh connection as on a kept-alive one. A client whose connect() is refused was not accepted and
stops. The server must then exit 0 and print how many requests it drained.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import threading
import time
from dataclasses import dataclass, field

import pytest

from fixtures.servers import free_port, start_test_server

CLIENTS = 16
# minilm fp32 on one 16-token row: about 8 ms alone, about 100 ms with 16 clients on 2 cores, so requests
# are running, queued and being written when the signal comes.
ROWS, TOKENS = 1, 16
BODY = json.dumps(
    {
        "inputs": [
            {
                "name": "input_ids",
                "shape": [ROWS, TOKENS],
                "datatype": "INT64",
                "data": [101] + [2000] * (ROWS * TOKENS - 2) + [102],
            },
            {"name": "attention_mask", "shape": [ROWS, TOKENS], "datatype": "INT64", "data": [1] * (ROWS * TOKENS)},
        ]
    }
).encode()
PATH = "/v2/models/minilm/versions/fp32/infer"
DRAINED = re.compile(r"onnxport: drained (\d+) requests in ([0-9.]+) s, exiting")


@dataclass
class Client:
    """One client's loop: new connections (keep_alive False) or one connection reused while the server keeps it."""

    port: int
    keep_alive: bool
    answered: int = 0
    answered_after: int = 0  # answers read after the signal
    refused: bool = False
    failures: list[str] = field(default_factory=list)
    connection: http.client.HTTPConnection | None = None

    def run(self, stop: threading.Event, signalled: threading.Event) -> None:
        try:
            self._loop(stop, signalled)
        finally:
            if self.connection is not None:
                self.connection.close()

    def _loop(self, stop: threading.Event, signalled: threading.Event) -> None:
        while not stop.is_set() and not self.failures:
            if self.connection is None or self.connection.sock is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
                try:
                    self.connection.connect()
                except ConnectionRefusedError:
                    self.refused = True  # not accepted: the server has stopped listening
                    return
                except OSError as exc:
                    self.failures.append(f"connect: {exc!r}")
                    return
            try:
                self.connection.request("POST", PATH, BODY, {"Content-Type": "application/json"})
                response = self.connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:  # a reset, an EOF before the answer, a timeout
                self.failures.append(f"request on an accepted connection: {exc!r}")
                return
            if response.status >= 500 or len(data) != int(response.headers.get("Content-Length", -1)):
                self.failures.append(f"HTTP {response.status}, {len(data)} bytes: {data[:200]!r}")
                return
            self.answered += 1
            self.answered_after += signalled.is_set()
            if not self.keep_alive or response.will_close:
                self.connection.close()  # http.client reconnects for the next request: connect() again


def refused(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
        return False


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_sigterm_under_16_clients_answers_every_accepted_request(demo_repository, tmp_path):
    port = free_port()
    server = start_test_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)],
        port,
        tmp_path / "server.log",
        env={"ONNXPORT_REQUEST_LOG": "off"},
    )
    clients = [Client(port, keep_alive=n % 2 == 1) for n in range(CLIENTS)]
    stop, signalled = threading.Event(), threading.Event()
    threads = [threading.Thread(target=client.run, args=(stop, signalled), daemon=True) for client in clients]
    try:
        for thread in threads:
            thread.start()
        # Traffic first: every client has had answers, so requests are in flight on all of them.
        assert wait_for(lambda: all(c.answered >= 2 or c.failures for c in clients), 30), server.log(3000)
        server.process.send_signal(signal.SIGTERM)
        signalled.set()
        assert wait_for(lambda: "stopped accepting" in server.log() or server.process.poll() is not None, 10), (
            server.log(3000)
        )
        assert refused(port), "a new connection was accepted after SIGTERM"
        code = server.process.wait(timeout=40)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        stop.set()
        server.stop()
    log = server.log()
    failures = [
        f"client {n} ({'keep-alive' if c.keep_alive else 'new connections'}): {f}"
        for n, c in enumerate(clients)
        for f in c.failures
    ]
    assert not failures, "\n".join(failures) + "\n" + log[-3000:]
    assert code == 0, log[-3000:]
    drained = DRAINED.search(log)
    assert drained, log[-3000:]
    assert int(drained[1]) >= 1, log[-3000:]  # requests were in flight at the signal, and were answered
    assert all(c.refused for c in clients), "every client ends refused: the server stopped listening"
    answered_after = sum(c.answered_after for c in clients)
    print(
        f"drain: {drained[0]}; clients read {answered_after} answers after SIGTERM, "
        f"{sum(c.answered for c in clients)} in all, none reset"
    )


def post(connection: http.client.HTTPConnection, body: bytes = BODY) -> http.client.HTTPResponse:
    connection.request("POST", PATH, body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response


def minilm_body(rows: int, tokens: int) -> bytes:
    return json.dumps(
        {
            "inputs": [
                {"name": "input_ids", "shape": [rows, tokens], "datatype": "INT64", "data": [101] * rows * tokens},
                {"name": "attention_mask", "shape": [rows, tokens], "datatype": "INT64", "data": [1] * rows * tokens},
            ]
        }
    ).encode()


def test_idle_keep_alive_connections_get_a_grace_then_a_close_not_a_reset(demo_repository, tmp_path):
    port = free_port()
    server = start_test_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)],
        port,
        tmp_path / "server.log",
        env={"ONNXPORT_REQUEST_LOG": "off"},
    )
    sending, silent = (http.client.HTTPConnection("127.0.0.1", port, timeout=20) for _ in range(2))
    try:
        assert post(sending).status == post(silent).status == 200  # both kept alive, idle at the signal
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.05)  # well within drain.IDLE_GRACE: the client's next request is still answered
        late = post(sending)
        assert (late.status, late.getheader("Connection")) == (200, "close")
        assert silent.sock.recv(1) == b""  # after the grace, a FIN: an EOF, not a reset
        code = server.process.wait(timeout=20)
    finally:
        sending.close()
        silent.close()
        server.stop()
    assert code == 0, server.log(3000)
    assert DRAINED.search(server.log())[1] == "1", server.log(3000)


def test_requests_still_running_when_drain_seconds_passes_are_abandoned_with_status_1(demo_repository, tmp_path):
    port = free_port()
    server = start_test_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)],
        port,
        tmp_path / "server.log",
        env={"ONNXPORT_REQUEST_LOG": "off", "ONNXPORT_DRAIN_SECONDS": "0"},
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        assert post(connection, minilm_body(1, 8)).status == 200  # the session is loaded
        # Seconds of work: still running when the signal comes and the bound (0 s) passes.
        connection.request("POST", PATH, minilm_body(64, 256), {"Content-Type": "application/json"})
        time.sleep(0.3)
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=20)
        with pytest.raises((http.client.HTTPException, OSError)):
            connection.getresponse().read()
    finally:
        connection.close()
        server.stop()
    log = server.log()
    assert code == 1, log[-3000:]
    assert "drain_seconds (0) passed with 1 requests unanswered on 1 connections: abandoned" in log, log[-3000:]
    assert "onnxport: error: stopped with 1 requests unanswered" in log, log[-3000:]


@pytest.mark.parametrize("text, expected", [("30", 30.0), ("2.5", 2.5), ("0", 0.0)])
def test_drain_seconds_parses(text, expected):
    from onnxport.serving import config

    assert config.load(environ={"ONNXPORT_DRAIN_SECONDS": text})["drain_seconds"] == expected


@pytest.mark.parametrize("text", ["-1", "soon", "nan", "inf"])
def test_drain_seconds_refuses_what_is_not_a_duration(text):
    from onnxport.serving import config

    with pytest.raises(config.ConfigError, match="drain_seconds: expected a number of seconds"):
        config.load(environ={"ONNXPORT_DRAIN_SECONDS": text})
