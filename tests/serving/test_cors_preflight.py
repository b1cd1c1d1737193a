"""CORS preflights: what an allowed origin may ask for (methods, headers), and the 403 naming what is not allowed."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from fixtures.cors import ALLOWED, DENIED, OTHER_ALLOWED, client_for

pytestmark = pytest.mark.usefixtures("clean_environment")


@pytest.fixture(scope="module")
def client(cors_client) -> FlaskClient:
    return cors_client


@pytest.fixture(scope="module")
def artifact(iris_fp32_artifact) -> dict:
    return iris_fp32_artifact


def test_preflight_of_a_binary_inference(client):
    response = client.options(
        "/v2/models/iris/infer",
        headers={
            "Origin": ALLOWED,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,inference-header-content-length",
        },
    )
    assert response.status_code == 204
    assert response.data == b"" and "Content-Type" not in response.headers
    assert response.headers["Access-Control-Allow-Origin"] == ALLOWED
    methods = [m.strip() for m in response.headers["Access-Control-Allow-Methods"].split(",")]
    assert methods == ["GET", "HEAD", "POST", "OPTIONS"]
    assert response.headers["Access-Control-Allow-Headers"] == "content-type,inference-header-content-length"
    assert response.headers["Access-Control-Max-Age"] == "600"
    assert "Origin" in response.vary


@pytest.mark.parametrize("asked", ["range", "If-None-Match, Accept-Encoding", "Content-Encoding,Content-Type", ""])
def test_preflight_of_an_artifact_download(client, artifact, asked):
    headers = {"Origin": OTHER_ALLOWED, "Access-Control-Request-Method": "GET"}
    if asked:
        headers["Access-Control-Request-Headers"] = asked
    response = client.options(f"/repository/{artifact['file']}", headers=headers)
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == OTHER_ALLOWED
    assert response.headers.get("Access-Control-Allow-Headers") == (asked or None)


def test_preflight_from_an_origin_not_allowed(client, assert_json_error):
    response = client.options(
        "/v2/models/iris/infer",
        headers={
            "Origin": DENIED,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    message = assert_json_error(
        response, 403, f"origin {DENIED} is not allowed", "cors_origins", ALLOWED, OTHER_ALLOWED
    )
    assert message == f"origin {DENIED} is not allowed (setting cors_origins: {OTHER_ALLOWED}, {ALLOWED})"
    assert "Access-Control-Allow-Origin" not in response.headers


def test_preflight_asking_for_a_header_not_allowed(client, assert_json_error):
    response = client.options(
        "/v2/models/iris/infer",
        headers={
            "Origin": ALLOWED,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-api-key",
        },
    )
    assert_json_error(response, 403, "x-api-key", "Content-Type", "Inference-Header-Content-Length", "Range")
    assert "Access-Control-Allow-Origin" not in response.headers


def test_preflight_asking_for_a_method_not_allowed(client, assert_json_error):
    response = client.options("/api/manifest", headers={"Origin": ALLOWED, "Access-Control-Request-Method": "DELETE"})
    assert_json_error(response, 403, "DELETE", "GET, HEAD, POST, OPTIONS")


def test_preflight_without_cors_origins_says_so(demo_repository, assert_json_error):
    response = client_for(repository=demo_repository).options(
        "/v2/models/iris/infer", headers={"Origin": ALLOWED, "Access-Control-Request-Method": "POST"}
    )
    assert_json_error(response, 403, f"origin {ALLOWED} is not allowed (setting cors_origins: none)")
