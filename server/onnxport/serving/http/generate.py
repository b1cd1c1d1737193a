"""Generation over Flask: Triton's generate extension (`/v2/models/<m>/generate`, `generate_stream`) and the
OpenAI API (`/v1/completions`, `/v1/chat/completions`, `/v1/models`), each route handing its body to the
framework-free core (serving/generate/). A stream is an EventStream as the response body: the WSGI server
calls its close() when the response ends, however it ends, and that frees the generation."""

from __future__ import annotations

import json
from collections.abc import Callable

from flask import Blueprint, Response, request

from onnxport.json_boundary import JsonObject
from onnxport.serving.generate import answers, openai_wire, triton_wire
from onnxport.serving.generate import openapi_schemas as schemas
from onnxport.serving.generate.answers import EventStream
from onnxport.serving.generate.failures import GenerateError
from onnxport.serving.generate.runs import CLIENT_GONE, Service, staying
from onnxport.serving.http.context import state
from onnxport.serving.http.path_items import error
from onnxport.serving.v2 import openapi

EXTENSIONS = ("generate",)  # what this blueprint adds to GET /v2's extensions

blueprint = Blueprint("generate", __name__)


def service() -> Service:
    found = state().generation
    if found is None:  # state.build always makes one; a State built by hand may not have it
        raise GenerateError(404, "this server serves no generation models")
    return found


def _json(value: JsonObject, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return Response(body, status=status, mimetype="application/json", headers=headers)


def _stream(events: EventStream) -> Response:
    # No buffering on the way (a proxy's, X-Accel-Buffering) and no caching: each event goes out as it is made.
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(events, status=200, content_type=answers.EVENT_STREAM, headers=headers)


def _gone() -> Callable[[], bool]:
    """The engine's check of this request's client (waitress's: serving/waitress/client_gone.py), or never."""
    found = request.environ.get(CLIENT_GONE)
    return found if callable(found) else staying


def _answer(work: Callable[[], JsonObject | EventStream], openai_shape: bool) -> Response:
    try:
        _from_a_client_allowed()
        found = work()
    except GenerateError as exc:
        body = openai_wire.error(exc) if openai_shape else {"error": exc.message}
        return _json(body, exc.status, {"Retry-After": "1"} if exc.status == 429 else None)
    return _stream(found) if isinstance(found, EventStream) else _json(found)


def _from_a_client_allowed() -> None:
    """As V2's infer: a body a page could send without a preflight is refused (415), so that no page elsewhere
    can make the server generate (a page of a foreign origin that says so is refused by http/cors.py: 403)."""
    if request.mimetype not in ("", "application/json"):
        raise GenerateError(
            415,
            f"Content-Type {request.mimetype!r} is not accepted; send application/json "
            "(with curl -d, add -H 'Content-Type: application/json')",
        )


@blueprint.post("/v2/models/<model>/generate")
@blueprint.post("/v2/models/<model>/versions/<version>/generate")
def generate(model: str, version: str | None = None) -> Response:
    body = request.get_data()
    return _answer(lambda: answers.generate(service(), triton_wire.read(model, version, body, False), _gone()), False)


@blueprint.post("/v2/models/<model>/generate_stream")
@blueprint.post("/v2/models/<model>/versions/<version>/generate_stream")
def generate_stream(model: str, version: str | None = None) -> Response:
    body = request.get_data()
    return _answer(
        lambda: answers.generate_stream(service(), triton_wire.read(model, version, body, True), _gone()), False
    )


@blueprint.post("/v1/completions")
def completions() -> Response:
    body = request.get_data()
    return _answer(lambda: answers.completion(service(), openai_wire.completion_ask(body), _gone()), True)


@blueprint.post("/v1/chat/completions")
def chat_completions() -> Response:
    body = request.get_data()
    return _answer(lambda: answers.completion(service(), openai_wire.chat_ask(body), _gone()), True)


@blueprint.get("/v1/models")
def models() -> Response:
    generation = state().generation
    return _json(openai_wire.models(generation.models.names() if generation else [], openai_wire.now()))


# /v2/openapi.json (serving/http/openapi.py)
def _post(summary: str, request_schema: JsonObject, answer: JsonObject, openai_shape: bool, stream: bool) -> JsonObject:
    def failure(why: str) -> JsonObject:
        return openapi.json_response(schemas.OPENAI_ERROR, why) if openai_shape else error(why)

    content: JsonObject = {}
    if answer:
        content["application/json"] = {"schema": answer}
    if stream:
        content["text/event-stream"] = {"schema": {"type": "string"}}
    return {
        "summary": summary,
        "requestBody": {"required": True, "content": {"application/json": {"schema": request_schema}}},
        "responses": {
            "200": {"description": summary, "content": content},
            "400": failure("the body is not JSON, a field is wrong, or a budget is exceeded (named in the error)"),
            "404": failure("no such generation model or version"),
            "403": error("a page of another origin, not in cors_origins (http/cors.py)"),
            "413": error("the body is over max_request_bytes"),
            "415": failure("a Content-Type other than application/json"),
            "429": failure("generation_max_concurrent generations are running; try again soon"),
        },
    }


def paths() -> JsonObject:
    model, version = openapi.MODEL, openapi.VERSION
    found: JsonObject = {}
    for suffix, stream in (("generate", False), ("generate_stream", True)):
        summary = "Generate text: one answer" if not stream else "Generate text: Server-Sent Events, one per token"
        answer = {} if stream else schemas.GENERATE_ANSWER
        operation = _post(summary, schemas.GENERATE_REQUEST, answer, False, stream)
        found[f"/v2/models/{{model_name}}/{suffix}"] = {"post": {**operation, "parameters": [dict(model)]}}
        found[f"/v2/models/{{model_name}}/versions/{{model_version}}/{suffix}"] = {
            "post": {**operation, "parameters": [dict(model), dict(version)]}
        }
    found["/v1/completions"] = {
        "post": _post(
            "OpenAI completion (stream: true for chunks)", schemas.COMPLETION_REQUEST, schemas.OPENAI_ANSWER, True, True
        )
    }
    found["/v1/chat/completions"] = {
        "post": _post(
            "OpenAI chat completion (stream: true for chunks)", schemas.CHAT_REQUEST, schemas.OPENAI_ANSWER, True, True
        )
    }
    found["/v1/models"] = {
        "get": {
            "summary": "The generation models (OpenAI's model list)",
            "responses": {"200": openapi.json_response(schemas.MODELS, "the generation models")},
        }
    }
    return found
