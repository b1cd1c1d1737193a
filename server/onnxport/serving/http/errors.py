"""One JSON error shape for every failure: {"error": "..."} with a status that says who erred."""

from __future__ import annotations

import logging
import uuid

from flask import Flask, jsonify
from werkzeug.exceptions import HTTPException

from onnxport.errors import ModelFileError
from onnxport.serving.catalog import NotFound
from onnxport.serving.protocol import ProtocolError

log = logging.getLogger("onnxport.server")


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str):
    response = jsonify({"error": message})
    response.status_code = status
    return response


def init_app(app: Flask) -> None:
    app.register_error_handler(ApiError, lambda e: error_response(e.status, e.message))
    app.register_error_handler(ProtocolError, lambda e: error_response(400, str(e)))
    app.register_error_handler(NotFound, lambda e: error_response(404, str(e)))
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(ModelFileError, _server_error)
    app.register_error_handler(Exception, _server_error)


def _http_error(exc: HTTPException):
    messages = {
        404: "no such resource",
        405: f"method not allowed; allowed: {', '.join(sorted(exc.valid_methods or []))}" if hasattr(exc, "valid_methods") else None,
        413: "request body too large",
    }
    message = messages.get(exc.code) or exc.description or exc.name
    response = error_response(exc.code or 500, message)
    if exc.code == 405 and getattr(exc, "valid_methods", None):
        response.headers["Allow"] = ", ".join(exc.valid_methods)
    return response


def _server_error(exc: Exception):
    # A fault of ours: the log gets the details, the client an id to quote and nothing of our internals.
    request_id = uuid.uuid4().hex[:16]
    log.exception("request %s failed", request_id)
    response = error_response(500, f"internal error (request id {request_id})")
    response.headers["X-Request-Id"] = request_id
    return response
