"""A Reply of the V2 core (v2/core.py) as a Flask response: the one conversion every blueprint uses."""

from __future__ import annotations

from flask import Response

from onnxport.serving.v2.core import Reply


def send(reply: Reply) -> Response:
    response = Response(reply.body, status=reply.status, mimetype=reply.content_type)
    response.headers.update(reply.headers)
    return response
