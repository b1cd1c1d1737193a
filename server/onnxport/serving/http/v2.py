"""The Open Inference Protocol (V2) over Flask: routes that hand the request's parts to v2_core."""

from __future__ import annotations

from flask import Blueprint, Response, request

from onnxport.serving import v2_core
from onnxport.serving.http import memory, repository_api, statistics_api
from onnxport.serving.http.replies import send
from onnxport.serving.state import state

blueprint = Blueprint("v2", __name__, url_prefix="/v2")


@blueprint.get("/health/live")
def live():
    return send(v2_core.live(state()))


@blueprint.get("/health/ready")
def ready():
    return send(v2_core.ready(state()))


@blueprint.get("")
def server_metadata():
    return send(v2_core.server_metadata(state(), (*repository_api.EXTENSIONS, *statistics_api.EXTENSIONS)))


@blueprint.get("/openapi.json")
def openapi_document():
    """This API described for OpenAPI tools (serving/openapi.py), generated from the code that checks requests."""
    return send(v2_core.Reply(200, v2_core.openapi_document()))


@blueprint.get("/models/<model>")
@blueprint.get("/models/<model>/versions/<version>")
def model_metadata(model: str, version: str | None = None):
    return send(v2_core.model_metadata(state(), model, version))


@blueprint.get("/models/<model>/ready")
@blueprint.get("/models/<model>/versions/<version>/ready")
def model_ready(model: str, version: str | None = None):
    return send(v2_core.model_ready(state(), model, version))


@blueprint.post("/models/<model>/infer")
@blueprint.post("/models/<model>/versions/<version>/infer")
def infer(model: str, version: str | None = None) -> Response:
    sizes: list[int] = []
    try:
        # The stream, not get_data(): v2_core reads it in chunks and stops at the first one over a budget.
        body = request.stream if request.mimetype in v2_core.ACCEPTED_TYPES else b""
        return send(v2_core.infer(state(), model, version, request.mimetype, request.headers, body, sizes))
    finally:
        memory.note_size(max(sizes, default=0))
