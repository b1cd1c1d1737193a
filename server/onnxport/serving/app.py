"""The Flask app factory: nothing happens at import time; everything is configured here."""

from __future__ import annotations

from typing import Any, Mapping

from flask import Flask
from flask.json.provider import DefaultJSONProvider

from onnxport.serving import config as settings_module
from onnxport.serving import state as state_module
from onnxport.serving.http import (
    artifacts,
    conformance,
    cors,
    error_shape,
    fleet,
    generate,
    headers,
    manifest_schema,
    memory,
    repository_api,
    request_log,
    statistics_api,
    v2,
    web,
)


def create_app(
    config: Mapping[str, Any] | None = None,
    state: state_module.State | None = None,
    deployment: state_module.Deployment | None = None,
    replica: str | None = None,
) -> Flask:
    """The one app of every engine: waitress serves it, and each Ray Serve replica mounts it (ray/engine.py).
    state: serve one that exists (a Ray replica's) instead of building one from config, whose settings it
    already holds. deployment: answer the operator routes (/metrics, statistics, repository) for every replica
    of a Ray deployment (ray/replicas.py). replica: the name every response carries (X-Onnxport-Replica)."""
    settings = state.settings if state is not None else settings_module.load(config)
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = settings["max_request_bytes"]
    json_provider = DefaultJSONProvider(app)  # Flask's own, told to keep keys in the order they were built
    json_provider.sort_keys = False
    app.json = json_provider
    # No redirect (an HTML page) for `//`: such paths are simply not found.
    app.url_map.merge_slashes = False

    app.extensions["onnxport"] = state if state is not None else state_module.build(settings)
    app.extensions["onnxport.deployment"] = deployment

    error_shape.init_app(app)
    headers.init_app(app, replica)
    cors.init_app(app)
    memory.init_app(app)
    request_log.init_app(app, settings["request_log"])
    statistics_api.init_app(app)
    fleet.init_app(app)
    for blueprint in (
        web.blueprint,
        artifacts.blueprint,
        manifest_schema.blueprint,
        v2.blueprint,
        conformance.blueprint,
        repository_api.blueprint,
        statistics_api.blueprint,
        fleet.blueprint,
        generate.blueprint,
    ):
        app.register_blueprint(blueprint)
    return app
