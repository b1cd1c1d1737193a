"""The V2 server's latency per request, for before/after figures: each labelled server is started, asked
the same V2 inference requests one after another on one kept-alive connection, and stopped; the servers take
turns, round after round, so that load which comes and goes falls on each alike.

    python scripts/bench/serve_latency.py --repository REPO --model iris --rounds 3 \
        waitress="" ray="--engine ray" [before:ray="--engine ray@/path/to/old/server"]

A server is LABEL="extra serve arguments", optionally @SOURCE: a folder put first on PYTHONPATH (another
checkout's server/ folder), so that two versions of the code run from one environment.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(repository: Path, extra: list[str], source: str | None, port: int) -> subprocess.Popen:
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "onnxport", "serve", "--repository", str(repository), "--port", str(port), *extra]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def wait_ready(port: int, model: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", f"/v2/models/{model}/ready")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"serve_latency: no server ready on port {port} within {timeout:.0f} s")


def request_body(port: int, model: str) -> bytes:
    """A batch-1 request of zeros in the model's own input names, shapes and types (from its metadata)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", f"/v2/models/{model}")
    metadata = json.loads(connection.getresponse().read())
    inputs = []
    for tensor in metadata["inputs"]:
        shape = [1 if size < 0 else size for size in tensor["shape"]]
        count = 1
        for size in shape:
            count *= size
        inputs.append({"name": tensor["name"], "shape": shape, "datatype": tensor["datatype"], "data": [0] * count})
    return json.dumps({"inputs": inputs}).encode()


def measure(port: int, model: str, requests: int, warmup: int) -> list[float]:
    body = request_body(port, model)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times = []
    for index in range(warmup + requests):
        began = time.perf_counter()
        connection.request("POST", f"/v2/models/{model}/infer", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        elapsed = time.perf_counter() - began
        if response.status != 200:
            raise SystemExit(f"serve_latency: inference answered {response.status}")
        if index >= warmup:
            times.append(elapsed * 1000)
    return times


def throughput(port: int, model: str, clients: int, requests: int) -> float:
    """Requests per second with `clients` clients at once, each on its own connection."""
    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda _: measure(port, model, requests, 0), range(clients)))
    return clients * requests / (time.perf_counter() - began)


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def parse_server(text: str) -> tuple[str, list[str], str | None]:
    label, _, rest = text.partition("=")
    arguments, _, source = rest.partition("@")
    return label, shlex.split(arguments), source or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repository", type=Path, required=True)
    parser.add_argument("--model", default="iris")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--clients", type=int, default=8, help="clients at once for the req/s figure (0: none)")
    parser.add_argument("servers", nargs="+", help='LABEL="serve arguments"[@SOURCE]')
    args = parser.parse_args()
    servers = [parse_server(text) for text in args.servers]
    medians: dict[str, list[float]] = {label: [] for label, _, _ in servers}
    rates: dict[str, list[float]] = {label: [] for label, _, _ in servers}
    for round_ in range(1, args.rounds + 1):
        for label, extra, source in servers:
            port = free_port()
            process = start(args.repository, extra, source, port)
            try:
                wait_ready(port, args.model)
                times = sorted(measure(port, args.model, args.requests, args.warmup))
                rate = throughput(port, args.model, args.clients, args.requests // 2) if args.clients else 0.0
            finally:
                stop(process)
            median, p90 = statistics.median(times), times[int(len(times) * 0.9)]
            medians[label].append(median)
            rates[label].append(rate)
            print(
                f"round {round_} {label:>15}: median {median:6.2f} ms, p90 {p90:6.2f} ms "
                f"({args.requests} requests); {rate:7.1f} req/s with {args.clients} clients",
                flush=True,
            )
    first = servers[0][0]
    for label, values in medians.items():
        ratio = statistics.median(values) / statistics.median(medians[first])
        rate = statistics.median(rates[label])
        print(
            f"{label:>15}: median of medians {statistics.median(values):6.2f} ms, x{ratio:.2f} of {first}; "
            f"median {rate:.1f} req/s"
        )


if __name__ == "__main__":
    main()
