"""Run the app under waitress, a production WSGI server (threads share the sessions)."""

from __future__ import annotations

import json
from typing import Any, Mapping

from onnxport.errors import OnnxportError
from onnxport.serving.app import create_app


def _json_errors() -> None:
    """waitress answers what no application sees (a malformed request line, a duplicated
    Content-Length, a body over its own cap) itself, in text/plain. Its one hook for that body is
    waitress.utilities.Error.to_response (waitress 3.0, pinned in pyproject.toml); ours gives the
    same {"error": ...} as every other answer. tests/serving/test_framing.py holds it to that."""
    from waitress import utilities

    def to_response(self, ident=None):
        body = json.dumps({"error": f"{self.reason}: {self.body}".strip()}).encode()
        return f"{self.code} {self.reason}", [("Content-Type", "application/json")], body

    utilities.Error.to_response = to_response


def serve(config: Mapping[str, Any] | None = None) -> None:
    import waitress

    _json_errors()

    app = create_app(config)
    settings = app.extensions["onnxport"].settings
    try:
        server = waitress.create_server(
            app,
            host=settings["host"],
            port=settings["port"],
            threads=settings["workers"],
            # Flask answers 413 itself; waitress's own cap sits a little above so the JSON error gets through.
            max_request_body_size=settings["max_request_bytes"] + 1024 * 1024,
            ident="onnxport",
            clear_untrusted_proxy_headers=True,
        )
    except OSError as exc:
        raise OnnxportError(
            f"cannot listen on {settings['host']}:{settings['port']}: {exc.strerror or exc}; "
            "is another server running there? pass --port"
        ) from exc
    print(f"onnxport: serving {settings['repository']} on http://{settings['host']}:{settings['port']}/", flush=True)
    server.run()
