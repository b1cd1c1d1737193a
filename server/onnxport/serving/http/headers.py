"""Security and isolation headers on every response.

COOP + COEP make the page cross-origin isolated, which WebAssembly threads
need; CORP keeps our files ours; the CSP allows the app's own scripts, the
WebAssembly compile onnxruntime-web needs, and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import re
from collections.abc import Iterable

from flask import Flask, Response

INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S)


def policy(script_hashes: Iterable[str] = ()) -> str:
    """The CSP; inline scripts (the import map) are allowed by their sha256 alone."""
    scripts = " ".join(f"'sha256-{h}'" for h in script_hashes)
    return CONTENT_SECURITY_POLICY.replace("script-src 'self'", f"script-src 'self' {scripts}".rstrip())


def inline_script_hashes(html: bytes) -> list[str]:
    return [base64.b64encode(hashlib.sha256(body).digest()).decode() for body in INLINE_SCRIPT.findall(html)]


CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval'",
        "worker-src 'self' blob:",
        "connect-src 'self'",
        "img-src 'self' data: blob:",
        "style-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def init_app(app: Flask, replica: str | None = None) -> None:
    """replica: a Ray replica's name, sent with every response so that a client can tell replicas apart."""
    # Python's table lacks or misnames these; browsers refuse wasm streaming and module scripts otherwise.
    mimetypes.add_type("text/javascript", ".mjs")
    mimetypes.add_type("text/javascript", ".js")
    mimetypes.add_type("application/wasm", ".wasm")
    mimetypes.add_type("application/octet-stream", ".onnx")
    app.after_request(_add_headers)
    if replica is not None:
        app.after_request(lambda response: _name_replica(response, replica))


def _name_replica(response: Response, replica: str) -> Response:
    response.headers["X-Onnxport-Replica"] = replica
    return response


def _add_headers(response: Response) -> Response:
    headers = response.headers
    headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    headers.setdefault("Cross-Origin-Embedder-Policy", "require-corp")
    headers.setdefault("Cross-Origin-Resource-Policy", "same-origin")
    headers.setdefault("X-Content-Type-Options", "nosniff")
    if response.mimetype == "text/html":
        headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    return response
