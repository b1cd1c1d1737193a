"""The OpenAI API (/v1/) under the cors_origins policy of the V2 and artifact routes, on a real `onnxport serve`:
a page of an allowed origin gets its preflight answered (the headers OpenAI's clients send included) and can read
the answers, whole and streamed; a page of any other origin is refused, preflight and POST, before any work."""

from __future__ import annotations

import http.client
import json

import pytest

from fixtures.cors import ALLOWED, DENIED
from fixtures.servers import start_test_server
from onnxport.harness.process import free_port

CHAT = "/v1/chat/completions"
ASK = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3}
# What a browser sends before the official openai JavaScript client's first POST.
OPENAI_JS_HEADERS = "authorization, content-type, x-stainless-lang, x-stainless-os, x-stainless-retry-count"


@pytest.fixture(scope="module")
def server(tiny_decoder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("generation-cors")
    (folder / "repository").mkdir()
    port = free_port()
    env = {
        "ONNXPORT_GENERATION_MODELS": f"tiny={tiny_decoder}",
        "ONNXPORT_CORS_ORIGINS": ALLOWED,
        "ONNXPORT_FLEET_DB": ":memory:",
    }
    args = ["serve", "--repository", str(folder / "repository"), "--port", str(port)]
    process = start_test_server(args, port, folder / "server.log", env=env, probe="/v2/health/live")
    yield process.base_url
    process.stop()


def exchange(base: str, method: str, path: str, headers: dict[str, str], body: bytes | None = None):
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=60)
    try:
        connection.request(method, path, body, headers)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def preflight(base: str, origin: str, asked: str = OPENAI_JS_HEADERS):
    headers = {"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": asked}
    return exchange(base, "OPTIONS", CHAT, headers)


def post(base: str, origin: str, body: dict):
    headers = {"Origin": origin, "Content-Type": "application/json", "Authorization": "Bearer anything"}
    return exchange(base, "POST", CHAT, headers, json.dumps(body).encode())


def test_an_allowed_page_gets_its_preflight_answered(server):
    status, headers, _ = preflight(server, ALLOWED)
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "POST" in headers["Access-Control-Allow-Methods"]
    assert headers["Access-Control-Allow-Headers"] == OPENAI_JS_HEADERS


def test_an_allowed_page_reads_a_chat_completion_whole_and_streamed(server):
    status, headers, body = post(server, ALLOWED, ASK)
    assert status == 200, body
    assert headers["Access-Control-Allow-Origin"] == ALLOWED and "Origin" in headers["Vary"]
    assert json.loads(body)["usage"]["completion_tokens"] == 3
    status, headers, body = post(server, ALLOWED, {**ASK, "stream": True})
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    assert headers["Access-Control-Allow-Origin"] == ALLOWED
    assert body.endswith(b"data: [DONE]\n\n")
    status, headers, body = exchange(server, "GET", "/v1/models", {"Origin": ALLOWED})
    assert status == 200 and headers["Access-Control-Allow-Origin"] == ALLOWED


def test_an_allowed_page_reads_the_openai_error_and_retry_after(server):
    status, headers, body = post(server, ALLOWED, {**ASK, "model": "nope"})
    assert status == 404 and headers["Access-Control-Allow-Origin"] == ALLOWED
    assert json.loads(body)["error"]["code"] == "model_not_found"
    assert "Retry-After" in headers["Access-Control-Expose-Headers"]


def test_a_header_outside_the_openai_clients_is_refused(server):
    status, headers, body = preflight(server, ALLOWED, "content-type, x-api-key")
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    assert "x-api-key" in json.loads(body)["error"]


def test_a_page_of_another_origin_is_refused_before_any_work(server):
    status, headers, body = preflight(server, DENIED)
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    assert DENIED in json.loads(body)["error"]
    status, headers, body = post(server, DENIED, ASK)
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    assert "cors_origins" in json.loads(body)["error"]
    status, headers, _ = exchange(server, "GET", "/v1/models", {"Origin": DENIED})
    assert status == 200 and "Access-Control-Allow-Origin" not in headers
