"""What the conformance page needs from the server: tolerances, golden inputs, its own URL."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from onnxport import tensor_json
from onnxport.accuracy import browser_tolerances
from onnxport.json_boundary import JsonObject
from onnxport.repository import testdata
from onnxport.repository.layout import VERDICTS_FILE
from onnxport.serving.http import path_items, web
from onnxport.serving.http.context import state
from onnxport.serving.http.files import send_contained, send_latest
from onnxport.serving.models.catalog import NotFound
from onnxport.serving.v2 import openapi

blueprint = Blueprint("conformance", __name__)


@blueprint.get("/conformance")
def page() -> Response:
    """The app itself; it opens its conformance page when the path is /conformance."""
    return web.index()


@blueprint.get("/api/tolerances")
def tolerance_table():
    return jsonify(browser_tolerances.table(state().settings.get("tolerances_file")))


@blueprint.get("/api/conformance")
def verdicts() -> Response:
    """The browser verdicts `onnxport check` recorded in this repository (docs/reference/conformance.md)."""
    return send_latest(state().catalog.repository.root / VERDICTS_FILE)


@blueprint.get("/api/models/<model>/golden")
def golden(model: str):
    """Golden inputs and the source's outputs, as {name: {dtype, shape, data: base64 little-endian}}."""
    entry = state().catalog.model(model)
    sets = testdata.read_golden(state().catalog.repository.root, entry)
    return jsonify(
        {
            "model": model,
            "sets": [{"inputs": tensor_json.encode(i), "outputs": tensor_json.encode(o)} for i, o in sets],
        }
    )


@blueprint.get("/debug/<path:relative>")
def debug_file(relative: str) -> Response:
    """Models made by `onnxport check --locate` (every intermediate value as an output)."""
    root = state().settings.get("debug_root")
    if not root:
        raise NotFound("no debug models on this server")
    return send_contained(root, relative, cache_control="no-store")


def paths() -> JsonObject:
    """These routes for /v2/openapi.json (serving/http/openapi.py)."""
    golden = {
        "type": "object",
        "required": ["model", "sets"],
        "properties": {
            "model": {"type": "string"},
            "sets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["inputs", "outputs"],
                    "properties": {"inputs": {"type": "object"}, "outputs": {"type": "object"}},
                },
            },
        },
    }
    return {
        "/conformance": path_items.page("The app, opening its conformance page"),
        "/api/tolerances": path_items.json_get("The browser tolerances, by variant and runtime", {"type": "object"}),
        "/api/conformance": path_items.latest("The browser verdicts `onnxport check` recorded"),
        "/api/models/{model_name}/golden": path_items.json_get(
            "Golden inputs and the source's outputs (base64, little-endian)",
            golden,
            {"404": path_items.error("no such model")},
            parameters=(openapi.MODEL,),
        ),
        "/debug/{relative}": path_items.file("A model made by `onnxport check --locate` (404 when there are none)"),
    }
