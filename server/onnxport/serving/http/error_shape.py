"""One JSON error shape for every failure: {"error": "..."} with a status that says who erred."""

from __future__ import annotations

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from onnxport.serving.v2 import core
from onnxport.serving.v2.core import ApiError  # noqa: F401 - raised by the other blueprints


def error_response(status: int, message: str):
    response = jsonify({"error": message})
    response.status_code = status
    return response


def init_app(app: Flask) -> None:
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _error)


def _error(exc: Exception):
    reply = core.error_reply(exc) or core.internal_error(exc)
    response = Response(reply.body, status=reply.status, mimetype=reply.content_type)
    response.headers.update(reply.headers)
    return response


def _http_error(exc: HTTPException):
    allowed: list[str] | None = getattr(exc, "valid_methods", None)  # set on MethodNotAllowed
    not_allowed = f"method not allowed; allowed: {', '.join(sorted(allowed or []))}"
    messages = {
        404: "no such resource",
        405: not_allowed if hasattr(exc, "valid_methods") else None,
        413: "request body too large",
    }
    status = exc.code or 500
    message = messages.get(status) or exc.description or exc.name
    response = error_response(status, message)
    if exc.code == 405 and allowed:
        response.headers["Allow"] = ", ".join(allowed)
    return response
