"""Run the app under waitress, a production WSGI server (threads share the sessions)."""

from __future__ import annotations

import errno
import json
import os
import sys
from dataclasses import replace
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


def url(host: str, port: int) -> str:
    bracketed = f"[{host}]" if ":" in host and not host.startswith("[") else host  # an IPv6 address
    return f"http://{bracketed}:{port}/"


def listening_urls(server: Any, host: str) -> list[str]:
    """Where `server` (waitress's) listens: the host as asked (a name stays a name), the port as bound,
    which with port 0 the system chose. A name with several addresses has a socket each; with port 0
    each has its own port, so then every address is listed."""
    bound = getattr(server, "effective_listen", None) or [(server.effective_host, server.effective_port)]
    ports = list(dict.fromkeys(int(port) for _, port in bound))
    if len(ports) == 1:
        return [url(host, ports[0])]
    return [url(address, int(port)) for address, port in bound]


def _cannot_listen(host: str, port: int, exc: Exception) -> OnnxportError:
    """One line for a failed bind, with the hint that fits what went wrong."""
    where = f"cannot listen on {host}:{port}"
    if isinstance(exc, ValueError):  # waitress: getaddrinfo found no address for the host
        return OnnxportError(f"{where}: {host!r} is not a known host name or address (pass --host, e.g. 127.0.0.1)")
    reason = getattr(exc, "strerror", None) or exc
    if getattr(exc, "errno", None) == errno.EADDRNOTAVAIL:
        return OnnxportError(f"{where}: {reason}; --host must be an address of this machine (or 0.0.0.0 for all)")
    if getattr(exc, "errno", None) == errno.EACCES:
        return OnnxportError(f"{where}: {reason}; ports below 1024 need privileges, pass --port 1024 or above")
    return OnnxportError(f"{where}: {reason}; is another server running there? pass --port")


def background_server(app: Any, host: str, threads: int) -> Any:
    """A plain waitress server for app on host and a free port, run by the caller (server.run in a thread): a Ray
    replica's operator port (ray/replicas.py), without serve()'s connection limits, error hook or drain."""
    from waitress.server import create_server

    return create_server(app, host=host, port=0, threads=threads)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def serve(config: Mapping[str, Any] | None = None) -> None:
    import waitress

    from onnxport.serving.http.request_log import server_logger
    from onnxport.serving.waitress import connections
    from onnxport.serving.waitress.drain import serve_until_drained

    _json_errors()

    app = create_app(config)
    settings = app.extensions["onnxport"].settings
    limits = connections.Limits.from_settings(settings)
    limits = replace(limits, max_connections=connections.open_file_room(limits.max_connections, _say))
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
            # poll(), not select(): select() cannot watch a descriptor numbered past 1023 (FD_SETSIZE), and
            # max_connections may take more than that.
            asyncore_use_poll=True,
            connection_limit=limits.max_connections,  # made exact by connections.apply below
            channel_timeout=limits.backstop,
        )
    except (OSError, ValueError) as exc:
        raise _cannot_listen(settings["host"], settings["port"], exc) from exc
    connections.apply(server, limits)
    # The line scripts and tests read for the port (with port 0, the only place it is told).
    urls = " and ".join(listening_urls(server, settings["host"]))
    print(f"onnxport: serving {settings['repository']} on {urls}", flush=True)
    guard = connections.Guard(limits, server_logger(settings["request_log"]))
    report = serve_until_drained(server, settings["drain_seconds"], guard=guard)
    if report is not None and report.abandoned:
        # Status 1, not 0: a rolling restart counts on 0 meaning nothing was dropped (docs/reference/server.md,
        # Stopping). And at once: the abandoned requests' threads are inside onnxruntime, and finalizing the interpreter
        # under them aborted the process (SIGABRT, "terminate called without an active exception").
        print(
            f"onnxport: error: stopped with {report.abandoned} requests unanswered (drain_seconds is "
            f"{settings['drain_seconds']:g}; a second signal also ends the drain)",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        os._exit(1)
