"""The server's V2 API: batch-1 round trips (JSON and binary), and throughput under concurrent clients."""

from __future__ import annotations

import http.client
import json
import threading
import time
from urllib.parse import urlsplit

import numpy as np

from onnxport.bench.report_types import ThroughputRow, Timing
from onnxport.bench.timing import measure, summarize
from onnxport.serving.v2 import protocol


class Client:
    """One kept-alive connection, as real clients (tritonclient) use."""

    def __init__(self, base_url: str):
        parts = urlsplit(base_url)
        if not parts.hostname:
            raise ValueError(f"no host in the server's URL {base_url!r}")
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> bytes:
        self.connection.request("POST", path, body=body, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"POST {path}: HTTP {response.status}: {data[:300]!r}")
        return data

    def close(self) -> None:
        self.connection.close()


def json_request(feeds: dict[str, np.ndarray]) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(
        {
            "inputs": [
                {"name": k, "shape": list(v.shape), "datatype": protocol.datatype_of(v), "data": v.ravel().tolist()}
                for k, v in feeds.items()
            ]
        }
    ).encode()
    return body, {"Content-Type": "application/json"}


def binary_request(feeds: dict[str, np.ndarray]) -> tuple[bytes, dict[str, str]]:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": k,
                    "shape": list(v.shape),
                    "datatype": protocol.datatype_of(v),
                    "parameters": {"binary_data_size": v.nbytes},
                }
                for k, v in feeds.items()
            ],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    return header + b"".join(protocol.to_binary(v) for v in feeds.values()), {
        "Inference-Header-Content-Length": str(len(header))
    }


def round_trips(base_url: str, path: str, feeds: dict[str, np.ndarray], runs: int) -> dict[str, Timing]:
    client = Client(base_url)
    try:
        return {
            kind: measure(lambda: client.post(path, *make(feeds)), runs=runs)
            for kind, make in (("json", json_request), ("binary", binary_request))
        }
    finally:
        client.close()


MEASUREMENT_SECONDS = 3.0  # of sending, per throughput row
MIN_PER_CLIENT, MAX_PER_CLIENT = 5, 200


def per_client(requests_per_s: float, clients: int) -> int:
    """Requests for each of `clients` so that a row at `requests_per_s` takes about MEASUREMENT_SECONDS."""
    return max(MIN_PER_CLIENT, min(MAX_PER_CLIENT, int(requests_per_s * MEASUREMENT_SECONDS) // clients))


def throughput_table(
    base_url: str, path: str, feeds: dict[str, np.ndarray], clients: tuple[int, ...], first_rate: float
) -> list[ThroughputRow]:
    """One throughput row per client count, each about MEASUREMENT_SECONDS long: the first sized by
    first_rate (the caller's estimate of requests per second), each next one by the rate the row before it
    measured. Sized by the model's speed alone, Ray Serve's rows (a round trip ten times waitress's) took
    ten times as long: 30 s for iris's table instead of 3 s a row."""
    rows: list[ThroughputRow] = []
    for count in clients:
        rate = rows[-1]["requests_per_s"] if rows else first_rate
        rows.append(throughput(base_url, path, feeds, count, per_client(rate, count)))
    return rows


def throughput(
    base_url: str, path: str, feeds: dict[str, np.ndarray], clients: int, requests_per_client: int
) -> ThroughputRow:
    """`clients` threads, each with its own connection, each sending binary requests back to back."""
    body, headers = binary_request(feeds)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start_line = threading.Barrier(clients + 1)

    def client_loop() -> None:
        client = Client(base_url)
        mine: list[float] = []
        try:
            try:
                client.post(path, body, headers)  # warm the connection and the session
            finally:
                start_line.wait()  # warmed or not, so that no other thread waits forever
            for _ in range(requests_per_client):
                begin = time.perf_counter()
                client.post(path, body, headers)
                mine.append((time.perf_counter() - begin) * 1000)
        except Exception as exc:
            with lock:
                errors.append(str(exc))
        finally:
            client.close()
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    for t in threads:
        t.start()
    start_line.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    result: ThroughputRow = {
        "clients": clients,
        "requests": len(latencies),
        "seconds": round(elapsed, 3),
        "requests_per_s": round(len(latencies) / elapsed, 2) if elapsed else 0.0,
        **summarize(latencies or [0.0]),
    }
    if errors:
        result["errors"] = errors[:3]
    return result
