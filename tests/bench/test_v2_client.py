"""bench/v2_client.py against a server that fails: the throughput run ends and reports the errors."""

from __future__ import annotations

import http.server
import threading
import time

import numpy as np

from onnxport.bench import v2_client as v2


class _Failing(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_failing_warm_up_request_does_not_leave_the_other_clients_waiting():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    result: dict = {}
    try:
        feeds = {"x": np.ones((1, 3), np.float32)}
        worker = threading.Thread(
            target=lambda: result.update(
                v2.throughput(
                    f"http://127.0.0.1:{server.server_port}",
                    "/v2/models/m/infer",
                    feeds,
                    clients=4,
                    requests_per_client=3,
                )
            ),
            daemon=True,
        )
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive(), "throughput() hangs when the warm-up request fails"
    finally:
        server.shutdown()
        server.server_close()
    assert result["requests"] == 0
    assert result["errors"] and "HTTP 503" in result["errors"][0]


class _Slow(http.server.BaseHTTPRequestHandler):
    """Answers each request after 10 ms: Ray Serve's round trip here, ten times waitress's."""

    protocol_version = "HTTP/1.1"  # kept-alive connections, as the bench's clients use

    def do_POST(self):  # http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(0.01)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def test_each_throughput_row_is_sized_by_the_rate_the_row_before_it_measured():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        # Estimated at 20 requests per second: the first row sends 60; the next one what MEASUREMENT_SECONDS
        # at the rate the first measured take (at most ~100/s), not the most a client may send.
        rows = v2.throughput_table(
            f"http://127.0.0.1:{server.server_port}", "/infer", {"x": np.ones((1, 3), np.float32)}, (1, 4), 20.0
        )
    finally:
        server.shutdown()
        server.server_close()
    assert rows[0]["requests"] == 20 * v2.MEASUREMENT_SECONDS
    expected = v2.per_client(rows[0]["requests_per_s"], 4)
    assert rows[1]["requests"] == 4 * expected and expected < v2.MAX_PER_CLIENT / 2, rows
    assert v2.per_client(1.0, 16) == v2.MIN_PER_CLIENT
