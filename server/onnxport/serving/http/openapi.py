"""The OpenAPI description of every route of the server, served at /v2/openapi.json: the V2 protocol's paths
and objects (serving/v2/openapi.py) and each blueprint's own paths (its module's `paths()`), in one document.

A blueprint registered in serving/app.py is listed in DESCRIBED too; tests/serving/http/test_openapi_coverage.py
fails naming any route of the app that the document leaves out.
"""

from __future__ import annotations

from onnxport import __version__
from onnxport.json_boundary import JsonObject
from onnxport.serving.http import (
    artifacts,
    conformance,
    fleet,
    generate,
    manifest_schema,
    repository_api,
    statistics_api,
    web,
)
from onnxport.serving.v2 import openapi as v2_openapi

# The blueprints besides V2's (whose paths serving/v2/openapi.py describes, with the protocol's objects).
DESCRIBED = (repository_api, statistics_api, artifacts, manifest_schema, conformance, fleet, web, generate)


def document() -> JsonObject:
    paths = v2_openapi.paths()
    for module in DESCRIBED:
        for path, item in module.paths().items():
            paths.setdefault(path, {}).update(item)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "onnxport: the Open Inference Protocol (V2) over REST, and the server's other routes",
            "version": __version__,
        },
        "paths": paths,
        "components": v2_openapi.components(),
    }
