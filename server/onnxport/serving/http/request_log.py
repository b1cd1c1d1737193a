"""One log line per request on stderr: who asked what, how it ended, how big, how long.

The `request_log` setting picks the form: json (the default: one object a line, for log shippers),
text (for a terminal) or off. A refused request's line carries the error the client got, which for a
400 from onnxruntime is onnxruntime's own message (v2/inference.py puts it there); runtime.py keeps
onnxruntime's logger quiet so the same message is not also printed as a raw `[E:onnxruntime...]` line.
The line is written in after_request, which Flask also runs for the answers of the error handlers
(error_shape.py), so every answered request has exactly one line. What waitress refuses before Flask sees
it (a malformed request line, 431, a body over its cap) and what waitress/connections.py cuts for its deadlines
(408) get a line of the same form through server_logger().

Every field comes from the client: text lines escape control and other non-printable characters (a
`%0A` in a path must not start a forged line, nor a `%1B` send escape codes to the terminal), and both
forms cut a field longer than FIELD_LIMIT characters with a marker saying how much was cut.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any, Callable, NotRequired, TypedDict

from flask import Flask, Response, g, request

from onnxport.json_boundary import JsonObject

FORMATS = ("json", "text", "off")
INFER_ENDPOINT = "v2.infer"
FIELD_LIMIT = 1000  # characters of one field, before escaping


class LogRecord(TypedDict):
    """One request's line, before its form: docs/reference/server.md names the fields."""

    id: str
    method: str | None  # None: a request line waitress could not read
    path: str | None
    model: str | None
    version: str | None
    protocol: str | None  # json or binary, for V2 inference
    status: int
    bytes_in: int
    bytes_out: int
    ms: float | None
    error: NotRequired[str]  # the error a refused request got


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
    write(record, form)
    return response


def write(record: LogRecord, form: str) -> None:
    line = json.dumps(cut_fields(record), separators=(",", ":")) if form == "json" else text(record)
    sys.stderr.write(line + "\n")  # one write: lines from concurrent threads do not interleave
    sys.stderr.flush()


def server_logger(form: str) -> Callable[[int, str | None, str | None, str, int, int], None] | None:
    """log(status, method, path, error, bytes_in, bytes_out) for requests the HTTP server answers itself,
    in the same form as the app's lines (None when the log is off)."""
    if form == "off":
        return None

    def log(status: int, method: str | None, path: str | None, error: str, bytes_in: int, bytes_out: int) -> None:
        write(
            {
                "id": uuid.uuid4().hex[:16],
                "method": method,
                "path": path,
                "model": None,
                "version": None,
                "protocol": None,
                "status": status,
                "bytes_in": bytes_in,
                "bytes_out": bytes_out,
                "ms": None,
                "error": error,
            },
            form,
        )

    return log


def entry(response: Response, request_id: str, milliseconds: float | None) -> LogRecord:
    args = request.view_args or {}
    record: LogRecord = {
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


def text(record: LogRecord) -> str:
    """`200 POST /v2/models/iris/infer model=iris version=- json in=123B out=45B 3.1ms id=...`, then the error;
    `-` for a method or path not known (a request line waitress could not read)."""
    parts = [str(record["status"]), word(record["method"]), word(record["path"])]
    if record["model"] is not None:
        parts += [f"model={word(record['model'])}", f"version={word(record['version'])}"]
    if record["protocol"] is not None:
        parts.append(word(record["protocol"]))
    parts += [f"in={record['bytes_in']}B", f"out={record['bytes_out']}B"]
    if record["ms"] is not None:
        parts.append(f"{record['ms']}ms")
    parts.append(f"id={word(record['id'])}")
    if "error" in record:
        parts.append(f"error={json.dumps(cut(record['error']))}")  # ASCII, every control character escaped
    return "onnxport: " + " ".join(parts)


def cut(value: str, escape: Callable[[str], str] = str) -> str:
    """`value` escaped, or its first FIELD_LIMIT characters escaped and `...[+N chars]` for the N cut."""
    if len(value) <= FIELD_LIMIT:
        return escape(value)
    return f"{escape(value[:FIELD_LIMIT])}...[+{len(value) - FIELD_LIMIT} chars]"


def cut_fields(record: LogRecord) -> JsonObject:  # the json form's line
    return {key: cut(value) if isinstance(value, str) else value for key, value in record.items()}


def word(value: Any) -> str:
    r"""A field of a text line: printable characters as they are; backslash, space and every other
    character as an escape (\\, \x20, \x0a, \x1b, \u202e), so a field is one word on one line; cut past
    FIELD_LIMIT characters; None as `-`."""
    if value is None or value == "":
        return "-"
    return cut(str(value), _printable)


def _printable(part: str) -> str:
    return "".join(ch if ch.isprintable() and ch not in " \\" else _escape(ch) for ch in part)


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch == "\\":
        return "\\\\"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
