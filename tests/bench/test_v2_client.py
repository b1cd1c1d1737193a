"""bench/v2_client.py against a server that fails: the throughput run ends and reports the errors."""

from __future__ import annotations

import http.server
import threading

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
