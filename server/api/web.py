"""The browser app (web/) and onnxruntime-web's files from the pinned npm package."""

from __future__ import annotations

from flask import Blueprint, Response

from . import headers
from .files import send_contained
from .state import state

blueprint = Blueprint("web", __name__)

REVALIDATE = "no-cache"


@blueprint.get("/")
def index() -> Response:
    response = send_contained(state().settings["web_root"], "index.html", cache_control=REVALIDATE)
    html = (state().settings["web_root"] / "index.html").read_bytes()
    response.headers["Content-Security-Policy"] = headers.policy(headers.inline_script_hashes(html))
    return response


@blueprint.get("/web/<path:relative>")
def web_file(relative: str) -> Response:
    return send_contained(state().settings["web_root"], relative, cache_control=REVALIDATE)


@blueprint.get("/vendor/tokenizers/<path:relative>")
def tokenizers_file(relative: str) -> Response:
    return send_contained(state().settings["tokenizers_root"], relative, cache_control=REVALIDATE)


@blueprint.get("/ort/<path:relative>")
def ort_file(relative: str) -> Response:
    return send_contained(state().settings["ort_root"], relative, cache_control=REVALIDATE)
