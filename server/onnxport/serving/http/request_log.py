"""One log line per request on stderr: who asked what, how it ended, how big, how long.

The `request_log` setting picks the form: json (the default: one object a line, for log shippers),
text (for a terminal) or off. A refused request's line carries the error the client got, which for a
400 from onnxruntime is onnxruntime's own message (inference.py puts it there); runtime.py keeps
onnxruntime's logger quiet so the same message is not also printed as a raw `[E:onnxruntime...]` line.
The line is written in after_request, which Flask also runs for the answers of the error handlers
(error_shape.py), so every answered request has exactly one line.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any

from flask import Flask, Response, g, request

FORMATS = ("json", "text", "off")
INFER_ENDPOINT = "v2.infer"


def init_app(app: Flask, form: str) -> None:
    if form == "off":
        return
    app.before_request(_start)
    app.after_request(lambda response: _finish(response, form))


def _start() -> None:
    g.request_log_start = time.perf_counter()


def _finish(response: Response, form: str) -> Response:
    started = g.get("request_log_start")
    # The 500 handler made an id for its log record and the client's answer; the line quotes the same one.
    request_id = response.headers.get("X-Request-Id") or uuid.uuid4().hex[:16]
    response.headers["X-Request-Id"] = request_id
    record = entry(response, request_id, None if started is None else (time.perf_counter() - started) * 1000)
    line = json.dumps(record, separators=(",", ":")) if form == "json" else text(record)
    sys.stderr.write(line + "\n")  # one write: lines from concurrent threads do not interleave
    sys.stderr.flush()
    return response


def entry(response: Response, request_id: str, milliseconds: float | None) -> dict[str, Any]:
    args = request.view_args or {}
    record: dict[str, Any] = {
        "id": request_id,
        "method": request.method,
        "path": request.path,
        "model": args.get("model"),
        "version": args.get("version"),
        "protocol": None,
        "status": response.status_code,
        "bytes_in": request.content_length or 0,
        "bytes_out": response.content_length or 0,
        "ms": None if milliseconds is None else round(milliseconds, 2),
    }
    if request.endpoint == INFER_ENDPOINT:
        record["protocol"] = "binary" if "Inference-Header-Content-Length" in request.headers else "json"
    if response.status_code >= 400 and not response.direct_passthrough and response.is_json:
        body = response.get_json(silent=True)
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            record["error"] = body["error"]
    return record


def text(record: dict[str, Any]) -> str:
    """`200 POST /v2/models/iris/infer model=iris version=- json in=123B out=45B 3.1ms id=...`, then the error."""
    parts = [str(record["status"]), record["method"], record["path"]]
    if record["model"] is not None:
        parts += [f"model={record['model']}", f"version={record['version'] or '-'}"]
    if record["protocol"] is not None:
        parts.append(record["protocol"])
    parts += [f"in={record['bytes_in']}B", f"out={record['bytes_out']}B"]
    if record["ms"] is not None:
        parts.append(f"{record['ms']}ms")
    parts.append(f"id={record['id']}")
    if "error" in record:
        parts.append(f"error={json.dumps(record['error'])}")
    return "onnxport: " + " ".join(parts)
