"""Triton's model repository extension: the index (public, read-only), and load/unload for the operator.

load creates the sessions of every served version of a model now instead of at its first request; unload
drops them (and stops their batchers) to give the memory back. The manifest still names the model, so a
later inference creates its session again, as at start: unload frees memory, it does not take a model out
of service (remove it from the repository for that). load and unload need the `admin_token` setting and
`Authorization: Bearer <token>`: without the setting they answer 403, with a wrong or missing token 401.
"""

from __future__ import annotations

import copy
import hmac

from flask import Blueprint, Response, request

from onnxport.json_boundary import JsonObject
from onnxport.repository.variant_record import made
from onnxport.serving.http.context import deployment, state
from onnxport.serving.http.replies import send
from onnxport.serving.state import State
from onnxport.serving.v2 import openapi
from onnxport.serving.v2.core import ApiError, json_reply

blueprint = Blueprint("repository_api", __name__, url_prefix="/v2/repository")
EXTENSIONS = ("model_repository",)  # listed by GET /v2

NOT_LOADED = "not loaded: its session is created by the first inference or by POST .../load"


@blueprint.post("/index")
def index():
    every_replica = deployment()
    return send(every_replica.index() if every_replica is not None else json_reply(_index(state())))


@blueprint.post("/models/<model>/load")
def load(model: str) -> Response:
    current = state()
    authorization = request.headers.get("Authorization", "")
    authorize(current, authorization)
    every_replica = deployment()
    if every_replica is not None:  # the 403/401 above, before any replica is asked
        return send(every_replica.load_or_unload(request.path, authorization))
    entry = current.catalog.model(model)  # NotFound: a JSON 404
    for version in current.catalog.served_versions(entry):
        _, _, record = current.catalog.variant(model, version)
        current.sessions.get(record["sha256"], current.catalog.file(record["file"]), f"{model} {version}")
    return send(json_reply({}))


@blueprint.post("/models/<model>/unload")
def unload(model: str) -> Response:
    current = state()
    authorization = request.headers.get("Authorization", "")
    authorize(current, authorization)
    every_replica = deployment()
    if every_replica is not None:
        return send(every_replica.load_or_unload(request.path, authorization))
    entry = current.catalog.model(model)
    current.sessions.release({r["sha256"] for r in entry["variants"].values() if made(r)})
    return send(json_reply({}))


def _index(current: State) -> list[dict[str, str]]:
    """One row per version the manifest has: READY when its session is in memory, else UNAVAILABLE and why; then
    the generation models' (a setting's decoder folders, the repository's decoders by variant)."""
    loaded = set(current.sessions.loaded())
    rows = []
    for name, entry in sorted(current.catalog.manifest()["models"].items()):
        for version, record in entry["variants"].items():
            if record["status"] != "ok":
                state_, reason = "UNAVAILABLE", f"not served: {record['status']}: {record.get('reason', '')}"
            elif record["sha256"] in loaded:
                state_, reason = "READY", ""
            else:
                state_, reason = "UNAVAILABLE", NOT_LOADED
            rows.append({"name": name, "version": version, "state": state_, "reason": reason})
    if current.generation is not None:
        rows += [
            {"name": v.name, "version": v.version, "state": "READY" if v.ready else "UNAVAILABLE", "reason": v.reason}
            for v in current.generation.models.versions()
        ]
    return rows


def authorize(current: State, authorization: str) -> None:
    """Raises the 403 (no admin_token set) or 401 (wrong or missing token) of load and unload."""
    token = current.settings.get("admin_token")
    if not token:
        raise ApiError(
            403,
            "model load/unload is off: set the admin_token setting (ONNXPORT_ADMIN_TOKEN or the "
            "config file) and send it as `Authorization: Bearer <token>`",
        )
    scheme, _, given = authorization.partition(" ")
    # compare_digest: the time taken does not tell how much of a guess was right.
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise ApiError(
            401, "missing or wrong admin token: send `Authorization: Bearer <token>` with the server's admin_token"
        )


def paths() -> JsonObject:
    """These routes for /v2/openapi.json (serving/http/openapi.py): the index, and load/unload with a token."""
    index = {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["name", "version", "state", "reason"],
            "properties": {
                "name": {"type": "string"},
                "version": {"type": "string"},
                "state": {"type": "string", "enum": ["READY", "UNAVAILABLE"]},
                "reason": {"type": "string"},
            },
        },
    }
    done = openapi.json_response({"type": "object"}, "done")
    action = lambda summary: {  # noqa: E731 - load and unload
        "post": {
            "summary": summary,
            "parameters": [copy.deepcopy(openapi.MODEL)],
            "requestBody": {"required": False, "content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {"200": copy.deepcopy(done), **openapi.errors(401, 403, 404)},
        }
    }
    return {
        "/v2/repository/index": {
            "post": {
                "summary": "The models and versions of the repository, and whether each session is loaded",
                "responses": {"200": openapi.json_response(index, "the index")},
            }
        },
        "/v2/repository/models/{model_name}/load": action("Create the model's sessions now (admin token)"),
        "/v2/repository/models/{model_name}/unload": action("Release the model's sessions (admin token)"),
    }
