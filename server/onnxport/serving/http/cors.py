"""Cross-origin use, by the `cors_origins` setting: other sites' pages may fetch our models and
artifacts, call the V2 API and the OpenAI API (/v1/: generation) and `import` our browser library from /web/lib/.

A request from an origin the setting does not name, or without an Origin header, gets today's
answer (same-origin CORP, no Access-Control-* headers); once any origin is allowed, only `Vary:
Origin` is added (the answer now depends on it) and artifacts are embeddable by everyone (CDNs
keep one copy for all origins). The allowed origin is echoed, never `*`.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, Response, request

from onnxport.serving.config import ANY_ORIGIN
from onnxport.serving.http.error_shape import error_response
from onnxport.serving.http.files import no_content
from onnxport.serving.state import State
from onnxport.serving.v2 import core

# What another origin may use: the data and code a page elsewhere needs, not our own pages.
PREFIXES = ("/api/", "/repository/", "/ort/", "/vendor/tokenizers/", "/vendor/chartjs/", "/web/", "/v2/", "/v1/")
EXACT = ("/v2",)
OPENAI = "/v1/"
ARTIFACTS = "/repository/artifacts/"
METHODS = ("GET", "HEAD", "POST", "OPTIONS")
REQUEST_HEADERS = (
    "Content-Type",
    "Content-Encoding",
    "Inference-Header-Content-Length",
    "Range",
    "If-None-Match",
    "Accept-Encoding",
)
# What OpenAI's clients send besides on /v1/: the API key (which this server ignores), its organization and project,
# and the official JavaScript client's X-Stainless-* (its version, runtime, retry count).
OPENAI_REQUEST_HEADERS = ("Authorization", "OpenAI-Organization", "OpenAI-Project")
OPENAI_HEADER_PREFIX = "x-stainless-"  # lower case: compared with the asked names lowered
# Readable by the page: sizes and ranges (download progress, resumes), the ETag, the V2 binary split, and when a
# refused generation (429) may try again.
EXPOSED_HEADERS = (
    "Content-Length",
    "Content-Range",
    "Accept-Ranges",
    "ETag",
    "Inference-Header-Content-Length",
    "Retry-After",
)
MAX_AGE_S = 600


@dataclass(frozen=True)
class Policy:
    origins: frozenset[str]

    @property
    def enabled(self) -> bool:
        return bool(self.origins)

    def allows(self, origin: str | None) -> bool:
        if not origin:
            return False
        return ANY_ORIGIN in self.origins or origin.lower() in self.origins

    def describe(self) -> str:
        return ", ".join(sorted(self.origins)) or "none"


def init_app(app: Flask) -> None:
    state: State = app.extensions["onnxport"]  # create_app sets it up before the hooks
    policy = Policy(frozenset(state.settings["cors_origins"]))
    app.before_request(lambda: _preflight(policy, state))
    app.after_request(lambda response: _decorate(policy, response))


def _in_scope(path: str) -> bool:
    return path in EXACT or path.startswith(PREFIXES)


def _allowed_headers(path: str) -> tuple[tuple[str, ...], str]:
    """The request headers a page elsewhere may send to `path`, and a prefix (lower case) of more, or ""."""
    if path.startswith(OPENAI):
        return (*REQUEST_HEADERS, *OPENAI_REQUEST_HEADERS), OPENAI_HEADER_PREFIX
    return REQUEST_HEADERS, ""


def _is_preflight() -> bool:
    return request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers


def _preflight(policy: Policy, state: State) -> Response | None:
    """Answer a preflight before routing: 204 with what may be sent, or 403 saying what may not; refuse a write
    from a page of a foreign origin before any work."""
    if request.method == "POST":
        refused = core.foreign_origin(state, request.headers)
        if refused is not None:
            return error_response(403, refused)
    origin = request.headers.get("Origin")
    if not origin or not _is_preflight() or not _in_scope(request.path):
        return None
    if not policy.allows(origin):
        return error_response(403, f"origin {origin} is not allowed (setting cors_origins: {policy.describe()})")
    method = request.headers["Access-Control-Request-Method"].strip()
    if method.upper() not in METHODS:
        return error_response(403, f"method {method} is not allowed cross-origin; allowed: {', '.join(METHODS)}")
    asked = request.headers.get("Access-Control-Request-Headers", "")
    names, prefix = _allowed_headers(request.path)
    allowed = {h.lower() for h in names}
    for name in (h.strip() for h in asked.split(",")):
        if name and name.lower() not in allowed and not (prefix and name.lower().startswith(prefix)):
            named = ", ".join((*names, f"{prefix}*") if prefix else names)
            return error_response(403, f"request header {name} is not allowed cross-origin; allowed: {named}")
    response = no_content({"Access-Control-Allow-Origin": origin})
    response.headers["Access-Control-Allow-Methods"] = ", ".join(METHODS)
    if asked.strip():
        response.headers["Access-Control-Allow-Headers"] = asked.strip()
    response.headers["Access-Control-Max-Age"] = str(MAX_AGE_S)
    response.headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    response.vary.update(("Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers"))
    return response


def _decorate(policy: Policy, response: Response) -> Response:
    # Runs for error responses too (error handlers' responses pass through after_request), so a
    # page elsewhere can read the JSON error. headers.py only sets CORP when it is still unset.
    if not policy.enabled or _is_preflight() or not _in_scope(request.path):
        return response
    # Every answer on these paths depends on Origin once any origin is allowed: shared caches must key on it.
    response.vary.add("Origin")
    if request.path.startswith(ARTIFACTS):
        # A CDN keeps one copy of an immutable artifact for every origin: it must be embeddable by all.
        response.headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    origin = request.headers.get("Origin")
    if policy.allows(origin):
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Expose-Headers"] = ", ".join(EXPOSED_HEADERS)
        response.headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response
