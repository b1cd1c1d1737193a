"""The Content-Security-Policy of HTML under /web/: the hashes of each page's own inline scripts, kept on a 304;
the app's import map and the vendored files it names."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from urllib.parse import unquote

import pytest
from flask.testing import FlaskClient

from fixtures.cors import ALLOWED, DENIED, EXAMPLE_SCRIPT, INDEX_SCRIPT, client_for
from onnxport.serving.http.headers import INLINE_SCRIPT

pytestmark = pytest.mark.usefixtures("clean_environment")


@pytest.fixture(scope="module")
def client(cors_client) -> FlaskClient:
    return cors_client


def csp_hashes(response) -> list[str]:
    return re.findall(r"'sha256-([^']+)'", response.headers["Content-Security-Policy"])


def sha256_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_an_html_page_under_web_gets_the_hash_of_its_inline_script(client):
    response = client.get("/web/examples/index.html")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "'wasm-unsafe-eval'" in csp
    assert csp_hashes(response) == [sha256_b64(EXAMPLE_SCRIPT)]  # its own script, not the index's


def test_the_index_keeps_its_own_hashes(client):
    response = client.get("/")
    assert csp_hashes(response) == [sha256_b64(INDEX_SCRIPT)]
    assert csp_hashes(client.get("/web/index.html")) == [sha256_b64(INDEX_SCRIPT)]


def test_the_example_page_revalidated_keeps_its_csp(client):
    etag = client.get("/web/examples/index.html").headers["ETag"]
    response = client.get("/web/examples/index.html", headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert csp_hashes(response) == [sha256_b64(EXAMPLE_SCRIPT)]


def test_scripts_and_styles_get_no_csp(client):
    assert "Content-Security-Policy" not in client.get("/web/lib/manifest.js").headers


def test_the_app_import_map_names_served_files_under_the_same_policy(demo_repository):
    """web/index.html's import map (the tokenizers, Chart.js): allowed by its hash alone, each file served isolated."""
    client = client_for(repository=demo_repository)  # the real web/ and node_modules
    page = client.get("/")
    scripts = INLINE_SCRIPT.findall(page.data)
    assert len(scripts) == 1, "the index has one inline script, its import map"
    csp = page.headers["Content-Security-Policy"]
    assert csp_hashes(page) == [sha256_b64(scripts[0])]
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp and "style-src 'self';" in csp
    imports = json.loads(scripts[0])["imports"]
    assert imports["chart.js"] == "/vendor/chartjs/chart.umd.min.js"
    for specifier, url in imports.items():
        response = client.get(url)
        assert response.status_code == 200, f"{specifier}: {url} is {response.status_code} (npm ci?)"
        assert response.mimetype == "text/javascript", specifier
        assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
        assert response.headers["Cross-Origin-Resource-Policy"] == "same-origin"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "Content-Security-Policy" not in response.headers


def test_chartjs_is_shared_cross_origin_like_the_other_vendored_files(client):
    response = client.get("/vendor/chartjs/chart.umd.min.js", headers={"Origin": ALLOWED})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert response.headers["Cross-Origin-Resource-Policy"] == "cross-origin"
    denied = client.get("/vendor/chartjs/chart.umd.min.js", headers={"Origin": DENIED})
    assert "Access-Control-Allow-Origin" not in denied.headers
    assert denied.headers["Cross-Origin-Resource-Policy"] == "same-origin"


@pytest.mark.parametrize(
    "raw_path", ["/vendor/chartjs/..%2fpackage.json", "/vendor/chartjs/%2e%2e/%2e%2e/%2e%2e/package.json"]
)
def test_chartjs_files_stay_inside_their_folder(client, assert_json_error, raw_path):
    raw = {"PATH_INFO": unquote(raw_path), "REQUEST_URI": raw_path, "RAW_URI": raw_path}  # as a client sends it
    response = client.get("/", environ_overrides=raw)
    assert_json_error(response, 404)
