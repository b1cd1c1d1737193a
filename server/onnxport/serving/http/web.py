"""The browser app (web/) and the files of its pinned npm packages: onnxruntime-web, the tokenizers, Chart.js."""

from __future__ import annotations

from flask import Blueprint, Response

from onnxport.json_boundary import JsonObject
from onnxport.serving.http import headers, path_items
from onnxport.serving.http.context import state
from onnxport.serving.http.files import contained, send, send_contained

blueprint = Blueprint("web", __name__)

REVALIDATE = "no-cache"
FAVICON = "favicon.svg"  # web/index.html links it; an SVG, which every engine we check shows


@blueprint.get("/")
def index() -> Response:
    return _web_file("index.html")


@blueprint.get("/favicon.ico")
def favicon() -> Response:
    """Browsers ask for /favicon.ico on a page that links none (the examples, a JSON file opened directly)."""
    return _web_file(FAVICON)


@blueprint.get("/web/<path:relative>")
def web_file(relative: str) -> Response:
    return _web_file(relative)


def _web_file(relative: str) -> Response:
    path = contained(state().settings["web_root"], relative)
    response = send(path, cache_control=REVALIDATE)
    if response.mimetype == "text/html":
        # Each page's inline scripts (the import map, an example's module script) are allowed by their hash.
        response.headers["Content-Security-Policy"] = headers.policy(headers.inline_script_hashes(path.read_bytes()))
    return response


@blueprint.get("/vendor/tokenizers/<path:relative>")
def tokenizers_file(relative: str) -> Response:
    return send_contained(state().settings["tokenizers_root"], relative, cache_control=REVALIDATE)


@blueprint.get("/vendor/chartjs/<path:relative>")
def chartjs_file(relative: str) -> Response:
    return send_contained(state().settings["chartjs_root"], relative, cache_control=REVALIDATE)


@blueprint.get("/ort/<path:relative>")
def ort_file(relative: str) -> Response:
    return send_contained(state().settings["ort_root"], relative, cache_control=REVALIDATE)


def paths() -> JsonObject:
    """These routes for /v2/openapi.json (serving/http/openapi.py)."""
    return {
        "/": path_items.page("The browser app"),
        "/favicon.ico": path_items.file("The app's icon (an SVG)", "image/svg+xml", parameters=()),
        "/web/{relative}": path_items.file("A file of the browser app and library (web/)"),
        "/vendor/tokenizers/{relative}": path_items.file("A file of @huggingface/tokenizers' dist folder"),
        "/vendor/chartjs/{relative}": path_items.file("A file of Chart.js's dist folder"),
        "/ort/{relative}": path_items.file("A file of onnxruntime-web's dist folder"),
    }
