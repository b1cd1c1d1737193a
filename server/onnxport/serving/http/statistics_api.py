"""`GET /metrics` (Prometheus text format) and Triton's statistics extension (`GET /v2/models/.../stats`),
both read from the app's statistics.Recorder, which the V2 core's infer (v2/core.py) feeds."""

from __future__ import annotations

from flask import Blueprint, Flask, Response, current_app, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from onnxport.json_boundary import JsonObject
from onnxport.serving import statistics
from onnxport.serving.generate.failures import GenerateError
from onnxport.serving.http.context import deployment, state
from onnxport.serving.http.replies import send
from onnxport.serving.state import record_statistics
from onnxport.serving.v2 import core, openapi

EXTENSIONS = ("statistics",)  # what this blueprint adds to GET /v2's extensions

blueprint = Blueprint("statistics", __name__)


def init_app(app: Flask) -> None:
    """One Recorder (and Prometheus registry) per State: built here, never at import time."""
    record_statistics(app.extensions["onnxport"])


def recorder() -> statistics.Recorder:
    found = state().recorder
    if found is None:  # create_app always sets it; a State built without it is a bug of ours
        raise RuntimeError(f"{current_app.name}: no statistics recorder")
    return found


@blueprint.get("/metrics")
def metrics() -> Response:
    every_replica = deployment()
    if every_replica is not None:
        return send(every_replica.metrics())
    return Response(generate_latest(recorder().registry), mimetype=None, content_type=CONTENT_TYPE_LATEST)


@blueprint.get("/v2/models/stats")
@blueprint.get("/v2/models/<model>/stats")
@blueprint.get("/v2/models/<model>/versions/<version>/stats")
def model_statistics(model: str | None = None, version: str | None = None) -> Response:
    every_replica = deployment()
    if every_replica is not None:
        return send(every_replica.statistics(request.path))
    catalog = state().catalog
    if model is None:
        models = catalog.manifest()["models"]
        pairs = [(name, v) for name in sorted(models) for v in catalog.served_versions(models[name])]
    else:
        generated = _generation_stats(model, version)
        if generated is not None:
            return send(core.json_reply({"model_stats": [generated]}))
        if version is None:
            pairs = [(model, v) for v in catalog.served_versions(catalog.model(model))]
        else:
            pairs = [(model, catalog.variant(model, version)[1])]  # NotFound: the one JSON 404
    return send(core.json_reply({"model_stats": recorder().model_stats(pairs)}))


def _generation_stats(model: str, version: str | None) -> JsonObject | None:
    """A generation model's entry (serving/generate/tallies.py), or None for a name it does not serve."""
    generation = state().generation
    if generation is None or model not in generation.models.names():
        return None
    try:
        served, _ = generation.models.find(model, version)
    except GenerateError as exc:
        raise core.ApiError(exc.status, exc.message) from None
    return generation.tallies.entry(model, served)


# Triton's statistics extension (http/statistics_api.py): counts and nanoseconds per model version.
DURATION = {
    "type": "object",
    "required": ["count", "ns"],
    "properties": {"count": {"type": "integer"}, "ns": {"type": "integer"}},
}
DURATIONS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output", "cache_hit", "cache_miss")
STATS: JsonObject = {
    "type": "object",
    "required": ["model_stats"],
    "properties": {
        "model_stats": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "name",
                    "version",
                    "last_inference",
                    "inference_count",
                    "execution_count",
                    "inference_stats",
                ],
                "properties": {
                    "name": {"type": "string"},
                    "version": {"type": "string"},
                    "last_inference": {"type": "integer"},
                    "inference_count": {"type": "integer"},
                    "execution_count": {"type": "integer"},
                    "inference_stats": {
                        "type": "object",
                        "required": list(DURATIONS),
                        "properties": {k: DURATION for k in DURATIONS},
                    },
                    "batch_stats": {"type": "array"},
                    "memory_usage": {"type": "array"},
                },
            },
        }
    },
}


def paths() -> JsonObject:
    """These routes for /v2/openapi.json (serving/http/openapi.py)."""
    get, model, version = openapi.get_operation, openapi.MODEL, openapi.VERSION
    return {
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics: requests, inference times, sessions, fleet reports",
                "responses": {
                    "200": {
                        "description": "the Prometheus text format",
                        "content": {CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}},
                    }
                },
            }
        },
        "/v2/models/stats": get("Inference statistics of every served version", STATS),
        "/v2/models/{model_name}/stats": get(
            "Inference statistics of the model's versions", STATS, 404, parameters=[model]
        ),
        "/v2/models/{model_name}/versions/{model_version}/stats": get(
            "Inference statistics of one version", STATS, 404, parameters=(model, version)
        ),
    }
