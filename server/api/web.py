"""The browser app (web/) and onnxruntime-web's files from the pinned npm package."""

from __future__ import annotations

from flask import Blueprint, Response

from .files import send_contained
from .state import state

blueprint = Blueprint("web", __name__)

REVALIDATE = "no-cache"


@blueprint.get("/")
def index() -> Response:
    return send_contained(state().settings["web_root"], "index.html", cache_control=REVALIDATE)


@blueprint.get("/web/<path:relative>")
def web_file(relative: str) -> Response:
    return send_contained(state().settings["web_root"], relative, cache_control=REVALIDATE)


@blueprint.get("/ort/<path:relative>")
def ort_file(relative: str) -> Response:
    return send_contained(state().settings["ort_root"], relative, cache_control=REVALIDATE)
