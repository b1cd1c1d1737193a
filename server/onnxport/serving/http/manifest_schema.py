"""The manifest's JSON Schema (repository/schema.py), for anyone who reads /api/manifest."""

from __future__ import annotations

import functools
import hashlib
import json

from flask import Blueprint, Response, request

from onnxport.json_boundary import JsonObject
from onnxport.repository.schema import manifest_schema
from onnxport.serving.http import path_items

blueprint = Blueprint("schema", __name__)

MEDIA_TYPE = "application/schema+json"


@blueprint.get("/api/manifest.schema.json")
def manifest_schema_document() -> Response:
    """The schema this server's build code writes; revalidated, as it changes with the code."""
    body, etag = _body()
    response = Response(body, mimetype=MEDIA_TYPE)
    response.set_etag(etag)
    response.headers["Cache-Control"] = "no-cache"
    response.make_conditional(request)  # in place: a 304 when the client's ETag matches
    return response


@functools.cache
def _body() -> tuple[bytes, str]:
    body = json.dumps(manifest_schema(), indent=2, sort_keys=True).encode() + b"\n"
    return body, hashlib.sha256(body).hexdigest()


def paths() -> JsonObject:
    """This route for /v2/openapi.json (serving/http/openapi.py)."""
    return {
        "/api/manifest.schema.json": {
            "get": {
                "summary": "The manifest's JSON Schema",
                "responses": {
                    "200": {"description": "the schema", "content": {MEDIA_TYPE: {"schema": {"type": "object"}}}},
                    "304": path_items.NOT_MODIFIED,
                },
            }
        }
    }
