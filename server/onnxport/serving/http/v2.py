"""The Open Inference Protocol (V2) over Flask: routes that hand the request's parts to the V2 core (v2/core.py)."""

from __future__ import annotations

import json

from flask import Blueprint, Response, request

from onnxport.serving.http import generate, memory, openapi, repository_api, statistics_api
from onnxport.serving.http.context import state
from onnxport.serving.http.replies import send
from onnxport.serving.v2 import core

blueprint = Blueprint("v2", __name__, url_prefix="/v2")


@blueprint.get("/health/live")
def live():
    return send(core.live(state()))


@blueprint.get("/health/ready")
def ready():
    return send(core.ready(state()))


@blueprint.get("")
def server_metadata():
    return send(
        core.server_metadata(state(), (*repository_api.EXTENSIONS, *statistics_api.EXTENSIONS, *generate.EXTENSIONS))
    )


@blueprint.get("/openapi.json")
def openapi_document():
    """Every route described for OpenAPI tools (http/openapi.py); V2's request schema is generated from the code
    that checks requests."""
    return send(core.Reply(200, json.dumps(openapi.document()).encode()))


@blueprint.get("/models/<model>")
@blueprint.get("/models/<model>/versions/<version>")
def model_metadata(model: str, version: str | None = None):
    return send(core.model_metadata(state(), model, version))


@blueprint.get("/models/<model>/ready")
@blueprint.get("/models/<model>/versions/<version>/ready")
def model_ready(model: str, version: str | None = None):
    return send(core.model_ready(state(), model, version))


@blueprint.post("/models/<model>/infer")
@blueprint.post("/models/<model>/versions/<version>/infer")
def infer(model: str, version: str | None = None) -> Response:
    sizes: list[int] = []
    try:
        # The stream, not get_data(): the core reads it in chunks and stops at the first one over a budget.
        body = request.stream if request.mimetype in core.ACCEPTED_TYPES else b""
        return send(core.infer(state(), model, version, request.mimetype, request.headers, body, sizes))
    finally:
        memory.note_size(max(sizes, default=0))
