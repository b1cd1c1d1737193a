"""Generation streamed through Ray Serve (`onnxport serve --engine ray`, serving/ray/): generate_stream and the
OpenAI API's `stream: true` reach the client event by event, while the generation still runs, and a client that
goes away mid-stream frees its generation (onnxport_generations_active back to 0, counted as cancelled) long
before max_tokens. One local cluster with one replica for the module."""

from __future__ import annotations

import json
import socket
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fixtures.servers import ray_test_server

pytestmark = pytest.mark.slow

LONG = 2000  # tokens: many seconds of generating, so what comes before the end is seen to come before it
ACTIVE = "onnxport_generations_active"
CANCELLED = ("onnxport_generation_requests_total", {"finish": "cancelled", "model": "tiny"})


@pytest.fixture(scope="module")
def ray_generation_server(tiny_decoder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray-generation")
    (folder / "repository").mkdir()
    env = {
        "ONNXPORT_GENERATION_MODELS": f"tiny={tiny_decoder}",
        "ONNXPORT_GENERATION_MAX_NEW_TOKENS": str(LONG),
        "ONNXPORT_GENERATION_MAX_CONTEXT": "4096",
        "ONNXPORT_FLEET_DB": ":memory:",
    }
    args = ["--replicas", "1", "--repository", str(folder / "repository")]
    with ray_test_server(args, folder, env, probe="/v2/health/live") as server:
        yield server.base_url


def metric(base: str, name: str, labels: dict[str, str] | None = None) -> float:
    """The sample `name` with these labels, summed over the replicas (Ray's /metrics labels each by its replica)."""
    with urllib.request.urlopen(base + "/metrics", timeout=30) as response:
        text = response.read().decode()
    wanted = (labels or {}).items()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and wanted <= sample.labels.items()
    )


def wait_for(check, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def first_event(base: str, path: str, body: dict) -> tuple[socket.socket, float]:
    """POST body on a raw socket and read until the first whole event: (the socket, seconds it took)."""
    host, port = base.removeprefix("http://").rstrip("/").split(":")
    sock = socket.create_connection((host, int(port)), timeout=120)
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    started = time.monotonic()
    sock.sendall(head.encode() + data)
    read = b""
    while b"}\n\n" not in read:
        chunk = sock.recv(4096)
        assert chunk, f"the server closed the stream: {read!r}"
        read += chunk
    assert b" 200 " in read.split(b"\r\n", 1)[0], read
    return sock, time.monotonic() - started


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v2/models/tiny/generate_stream", {"text_input": "Hello", "parameters": {"max_tokens": LONG}}),
        ("/v1/completions", {"model": "tiny", "prompt": "Hello", "max_tokens": LONG, "stream": True}),
    ],
    ids=["generate_stream", "openai"],
)
def test_a_stream_through_ray_comes_event_by_event_and_ends_with_its_client(ray_generation_server, path, body):
    base = ray_generation_server
    cancelled = metric(base, *CANCELLED)
    sock, seconds = first_event(base, path, body)
    running = metric(base, ACTIVE)
    print(f"\n{path}: first event after {seconds:.2f} s, generations active then: {running:g}")
    assert running == 1, "the first event came only once the generation had ended: Ray buffered the stream"
    closed = time.monotonic()
    sock.close()
    assert wait_for(lambda: metric(base, ACTIVE) == 0), "the generation still runs after its client left"
    print(f"{path}: client closed -> active generations 0 in {time.monotonic() - closed:.2f} s")
    assert metric(base, *CANCELLED) == cancelled + 1, "it ran to its end rather than being cancelled"


def test_a_whole_answer_through_ray_ends_when_its_client_leaves(ray_generation_server):
    """Not streamed: Ray Serve cancels the request when its client disconnects, and the replica tells the app."""
    base = ray_generation_server
    cancelled = metric(base, *CANCELLED)
    host, port = base.removeprefix("http://").rstrip("/").split(":")
    sock = socket.create_connection((host, int(port)), timeout=120)
    data = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": LONG}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    sock.sendall(head.encode() + data)
    assert wait_for(lambda: metric(base, ACTIVE) == 1), "the generation never started"
    closed = time.monotonic()
    sock.close()
    assert wait_for(lambda: metric(base, ACTIVE) == 0), "the generation still runs after its client left"
    print(f"\nwhole answer: client closed -> active generations 0 in {time.monotonic() - closed:.2f} s")
    assert metric(base, *CANCELLED) == cancelled + 1, "it ran to its end rather than being cancelled"
