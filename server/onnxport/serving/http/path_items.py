"""The parts each blueprint describes its routes with for /v2/openapi.json (serving/http/openapi.py): a file
from a folder, a page of the app, a JSON reply, an error in the one shape."""

from __future__ import annotations

import copy

from onnxport.json_boundary import JsonObject
from onnxport.serving.v2 import openapi

RELATIVE = {
    "name": "relative",
    "in": "path",
    "required": True,
    "description": "a file's path inside the folder (it may hold /)",
    "schema": {"type": "string"},
}
NOT_MODIFIED = {"description": "the client's copy is current (If-None-Match)"}
NO_CONTENT = {"description": "none yet (the command that writes it has not run)"}


def error(why: str) -> JsonObject:
    return openapi.json_response(copy.deepcopy(openapi.ERROR), why)


def file(summary: str, media_type: str = "*/*", parameters: tuple[JsonObject, ...] = (RELATIVE,)) -> JsonObject:
    """A GET of a file, conditional (ETag, 304) and ranged (206, 416)."""
    body = {"content": {media_type: {"schema": {"type": "string", "format": "binary"}}}}
    return {
        "get": {
            "summary": summary,
            "parameters": copy.deepcopy(list(parameters)),
            "responses": {
                "200": {"description": "the file", **body},
                "206": {"description": "the range asked for (Range)", **copy.deepcopy(body)},
                "304": NOT_MODIFIED,
                "404": error("no such file in the folder"),
                "416": {"description": "the range asked for is not in the file"},
            },
        }
    }


def page(summary: str) -> JsonObject:
    """A GET of a page of the browser app (web/index.html)."""
    return file(summary, "text/html", parameters=())


def json_get(
    summary: str,
    schema: JsonObject,
    others: JsonObject | None = None,
    parameters: tuple[JsonObject, ...] = (),
) -> JsonObject:
    """A GET whose 200 is JSON; others: its other responses by status."""
    return {
        "get": {
            "summary": summary,
            "parameters": copy.deepcopy(list(parameters)),
            "responses": {"200": openapi.json_response(schema, summary), **(others or {})},
        }
    }


def latest(summary: str) -> JsonObject:
    """A GET of a JSON file a command rewrites (files.send_latest): 204 while there is none."""
    return json_get(summary, {"type": "object"}, {"204": NO_CONTENT})
