"""The manifest and the repository's content-addressed files, served the way CDNs serve them."""

from __future__ import annotations

import hashlib
import json

from flask import Blueprint, Response, request

from onnxport.json_boundary import JsonObject
from onnxport.repository.layout import BENCH_FILE
from onnxport.serving.http import path_items
from onnxport.serving.http.context import state
from onnxport.serving.http.files import send, send_latest

blueprint = Blueprint("artifacts", __name__)

IMMUTABLE = "public, max-age=31536000, immutable"


@blueprint.get("/api/manifest")
# Also where a published repository folder has it, so /repository/ is one (what artifacts_url reads).
# A path without a converter outranks /repository/<path:relative> in werkzeug's routing.
@blueprint.get("/repository/manifest.json")
def manifest() -> Response:
    """The manifest as built; revalidated on every use (it changes with each build)."""
    body = json.dumps(state().catalog.manifest(), sort_keys=True).encode()
    etag = hashlib.sha256(body).hexdigest()
    response = Response(body, mimetype="application/json")
    response.set_etag(etag)
    response.headers["Cache-Control"] = "no-cache"
    response.make_conditional(request)  # in place: a 304 when the client's ETag matches
    return response


@blueprint.get("/api/bench")
def bench() -> Response:
    """The latest `onnxport bench` of this repository (the performance page charts it)."""
    return send_latest(state().catalog.repository.root / BENCH_FILE)


@blueprint.get("/repository/<path:relative>")
def repository_file(relative: str) -> Response:
    """Artifacts and golden data, by the path the manifest gives; the bytes never change."""
    path = state().catalog.file(relative)
    name = path.name
    # An artifact's name is its sha256: the strongest possible ETag.
    etag = name.split(".", 1)[0] if relative.startswith("artifacts/") else True
    return send(path, cache_control=IMMUTABLE, etag=etag)


def paths() -> JsonObject:
    """These routes for /v2/openapi.json (serving/http/openapi.py)."""
    manifest = path_items.json_get(
        "The manifest (its JSON Schema: /api/manifest.schema.json)",
        {"type": "object"},
        {"304": path_items.NOT_MODIFIED},
    )
    return {
        "/api/manifest": manifest,
        "/repository/manifest.json": manifest,
        "/api/bench": path_items.latest("The latest `onnxport bench` of this repository"),
        "/repository/{relative}": path_items.file("An artifact or golden data file, by the path the manifest gives"),
    }
