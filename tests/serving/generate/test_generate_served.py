"""Generation on a real `onnxport serve` (waitress), where streaming and disconnects are real: the official
`openai` client unchanged (completion and chat, streamed and whole), Triton's generate_stream read as it comes,
a client that goes away mid-stream freeing its generation, and a generation over the limit refused with 429."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import openai
import pytest

from fixtures.servers import start_test_server
from onnxport.harness.process import free_port

LONG = 2000  # tokens: seconds of generating, so a client that leaves is seen to leave before the end


@pytest.fixture(scope="module")
def server(tiny_decoder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("generation-server")
    (folder / "repository").mkdir()
    port = free_port()
    env = {
        "ONNXPORT_GENERATION_MODELS": f"tiny={tiny_decoder}",
        "ONNXPORT_GENERATION_MAX_NEW_TOKENS": str(LONG),
        "ONNXPORT_GENERATION_MAX_CONTEXT": "4096",
        "ONNXPORT_FLEET_DB": ":memory:",
    }
    args = ["serve", "--repository", str(folder / "repository"), "--port", str(port)]
    process = start_test_server(args, port, folder / "server.log", env=env, probe="/v2/health/live")
    yield process.base_url
    process.stop()


@pytest.fixture
def client(server):
    return openai.OpenAI(base_url=server + "/v1", api_key="anything", max_retries=0, timeout=60)


def metric(base: str, name: str, labels: str = "") -> float:
    with urllib.request.urlopen(base + "/metrics") as response:
        text = response.read().decode()
    match = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.MULTILINE)
    return float(match[1]) if match else 0.0


def wait_for(check, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_the_openai_client_completes_whole_and_streamed(client):
    whole = client.completions.create(model="tiny", prompt="Hello", max_tokens=8)
    assert whole.choices[0].finish_reason == "length" and whole.usage.completion_tokens == 8
    chunks = list(client.completions.create(model="tiny", prompt="Hello", max_tokens=8, stream=True))
    assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text
    assert chunks[-1].choices[0].finish_reason == "length"
    assert [m.id for m in client.models.list()] == ["tiny"]


def test_the_openai_client_chats_whole_and_streamed(client):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    whole = client.chat.completions.create(model="tiny", messages=messages, max_tokens=6)
    assert whole.choices[0].message.role == "assistant" and whole.usage.completion_tokens == 6
    stream = client.chat.completions.create(
        model="tiny", messages=messages, max_tokens=6, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == 6


def test_the_openai_client_hears_a_refusal_with_its_param(client):
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model="tiny", prompt="Hello", max_tokens=LONG + 1)
    assert raised.value.param == "max_tokens" and "generation_max_new_tokens" in raised.value.message
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="nope", prompt="Hello")


def open_stream(base: str, tokens: int = LONG) -> tuple[socket.socket, bytes]:
    """A generate_stream request on a raw socket, read until its first event: (the socket, what was read)."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    body = json.dumps({"text_input": "Hello", "parameters": {"max_tokens": tokens}}).encode()
    head = (
        f"POST /v2/models/tiny/generate_stream HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    read = b""
    while b"}\n\n" not in read:  # the first event whole
        chunk = sock.recv(4096)
        assert chunk, f"the server closed the stream: {read!r}"
        read += chunk
    return sock, read


def test_generate_stream_events_arrive_as_they_are_made(server):
    connection = http.client.HTTPConnection(server.removeprefix("http://"), timeout=30)
    body = json.dumps({"text_input": "Hello", "parameters": {"max_tokens": 5}})
    connection.request("POST", "/v2/models/tiny/generate_stream", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in response.read().decode().split("\n\n") if line]
    connection.close()
    assert len(events) == 6 and events[-1]["finish_reason"] == "length"
    assert all("text_output" in e for e in events)


def test_a_client_that_disconnects_mid_stream_frees_its_generation(server):
    cancelled = metric(server, "onnxport_generation_requests_total", '{finish="cancelled",model="tiny"}')
    sock, read = open_stream(server)
    assert b"HTTP/1.1 200" in read
    assert metric(server, "onnxport_generations_active") == 1
    sock.close()  # mid-stream: LONG tokens take seconds
    assert wait_for(lambda: metric(server, "onnxport_generations_active") == 0), "the generation still runs"
    after = metric(server, "onnxport_generation_requests_total", '{finish="cancelled",model="tiny"}')
    assert after == cancelled + 1, "it ended as cancelled, not by running to its end"


def test_a_client_that_leaves_a_whole_answer_frees_its_generation(server):
    """Non-streamed: nothing is written before the end, so only the server's check of the socket can see the
    client go. It ends the generation at the next token instead of at max_tokens."""
    cancelled = metric(server, "onnxport_generation_requests_total", '{finish="cancelled",model="tiny"}')
    generated = metric(server, "onnxport_generation_tokens_total", '{kind="generated",model="tiny"}')
    host, port = server.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": LONG}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    assert wait_for(lambda: metric(server, "onnxport_generations_active") == 1), "the generation never started"
    time.sleep(0.5)  # well into it
    closed = time.monotonic()
    sock.close()
    assert wait_for(lambda: metric(server, "onnxport_generations_active") == 0), "the generation still runs"
    seconds = time.monotonic() - closed
    made = metric(server, "onnxport_generation_tokens_total", '{kind="generated",model="tiny"}') - generated
    print(f"\nclient closed -> active generations 0 in {seconds:.2f} s, after {made:.0f} of {LONG} tokens")
    assert metric(server, "onnxport_generation_requests_total", '{finish="cancelled",model="tiny"}') == cancelled + 1
    assert made < LONG / 2, f"it ran on for {made:.0f} tokens after its client left"


def test_the_openai_client_closing_a_stream_frees_its_generation(server, client):
    stream = client.completions.create(model="tiny", prompt="Hello", max_tokens=LONG, stream=True)
    next(iter(stream))
    assert metric(server, "onnxport_generations_active") == 1
    stream.close()
    assert wait_for(lambda: metric(server, "onnxport_generations_active") == 0)


def test_a_generation_over_the_concurrency_limit_gets_a_429(server, client):
    held = [open_stream(server)[0] for _ in range(2)]  # generation_max_concurrent: 2 by default
    try:
        with pytest.raises(openai.RateLimitError) as raised:
            client.completions.create(model="tiny", prompt="Hello", max_tokens=4)
        assert raised.value.status_code == 429 and "generation_max_concurrent" in raised.value.message
    finally:
        for sock in held:
            sock.close()
    assert wait_for(lambda: metric(server, "onnxport_generations_active") == 0)
    assert client.completions.create(model="tiny", prompt="Hello", max_tokens=4).usage.completion_tokens == 4


SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def test_schemathesis_finds_no_server_error_on_the_generation_routes(server, tmp_path):
    """The OpenAPI document's generation routes fuzzed against the server: no 5xx, every answer as described,
    everything the schemas refuse refused. Warnings off: random model names mostly get the 404 they should."""
    command = [
        str(SCHEMATHESIS),
        "run",
        f"{server}/v2/openapi.json",
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance",
        "--include-path-regex",
        "(/generate|^/v1/)",
        "--max-examples",
        "60",
        "--workers",
        "1",
        "--seed",
        "1",
        "--no-color",
        "--warnings",
        "off",
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout
