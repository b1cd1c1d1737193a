"""/v2/openapi.json (serving/http/openapi.py) describes every route of the app, not only V2's, and stays a valid
OpenAPI 3.1 document."""

from __future__ import annotations

import re

import jsonschema
import pytest
from schemathesis.specs.openapi.definitions import OPENAPI_31

from onnxport.serving.app import create_app

pytestmark = pytest.mark.usefixtures("clean_environment")

# Flask's path variables as the document names them (the protocol's own names for a model and a version).
NAMES = {"model": "model_name", "version": "model_version"}
IMPLICIT = {"HEAD", "OPTIONS"}  # Flask answers them for every GET and route; no route of ours defines them


@pytest.fixture
def app(tmp_path):
    return create_app({"repository": tmp_path / "repository", "fleet_db": ":memory:", "request_log": "off"})


@pytest.fixture
def document(app):
    response = app.test_client().get("/v2/openapi.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    return response.json


def openapi_path(rule: str) -> str:
    """/v2/models/<model>/versions/<version> -> /v2/models/{model_name}/versions/{model_version}."""
    return re.sub(r"<(?:\w+:)?(\w+)>", lambda match: "{" + NAMES.get(match[1], match[1]) + "}", rule)


def test_the_path_of_a_flask_rule_is_the_documents():
    assert openapi_path("/v2/models/<model>/versions/<version>/infer") == (
        "/v2/models/{model_name}/versions/{model_version}/infer"
    )
    assert openapi_path("/ort/<path:relative>") == "/ort/{relative}"


def test_every_route_of_the_app_is_in_the_document(app, document):
    routes = {
        (method, openapi_path(rule.rule)) for rule in app.url_map.iter_rules() for method in rule.methods - IMPLICIT
    }
    missing = sorted(
        f"{method} {path}" for method, path in routes if method.lower() not in document["paths"].get(path, {})
    )
    assert not missing, "routes the OpenAPI document leaves out (describe each in its blueprint's paths()):\n  " + (
        "\n  ".join(missing)
    )
    described = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert described <= routes, f"described, but no such route: {sorted(described - routes)}"


def test_the_document_is_valid_openapi_3_1(document):
    jsonschema.Draft202012Validator(OPENAPI_31).validate(document)


def test_each_path_parameter_is_declared(document):
    for path, item in document["paths"].items():
        named = set(re.findall(r"\{(\w+)\}", path))
        for method, operation in item.items():
            declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert declared == named, f"{method.upper()} {path}: declares {sorted(declared)}, names {sorted(named)}"
