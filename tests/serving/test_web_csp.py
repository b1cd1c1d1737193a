"""The Content-Security-Policy of HTML under /web/: the hashes of each page's own inline scripts, kept on a 304."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from flask.testing import FlaskClient

from fixtures.cors import EXAMPLE_SCRIPT, INDEX_SCRIPT

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
