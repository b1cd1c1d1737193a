"""Batch-1 latency: raw onnxruntime `session.run` vs the V2 JSON and binary round trips.

Usage: .venv/bin/python scripts/measure_v2_overhead.py [--repository DIR] [--runs N]
Starts `onnxport serve` on a free port, measures each path with the same inputs
in one run, prints medians and ratios. (The full benchmark comes with `onnxport bench`.)
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server import protocol  # noqa: E402


def inputs_for(model: str) -> dict[str, np.ndarray]:
    if model == "digits":
        return {"pixels": np.random.default_rng(0).random((1, 1, 8, 8), dtype=np.float32)}
    ids = np.random.default_rng(0).integers(1000, 20000, (1, 128)).astype(np.int64)
    ids[0, 0], ids[0, -1] = 101, 102
    return {"input_ids": ids, "attention_mask": np.ones((1, 128), np.int64)}


def timed(fn, runs: int) -> float:
    for _ in range(5):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def post(connection: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    """One POST on a kept-alive connection, as real clients (tritonclient) send them."""
    connection.request("POST", path, body=body, headers=headers)
    response = connection.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"POST {path}: HTTP {response.status}: {data[:200]!r}")
    return data


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repository", default=str(ROOT / "models" / ".repository"))
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    manifest = json.loads((Path(args.repository) / "manifest.json").read_text())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--repository", args.repository,
                               "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/v2/health/ready")
                break
            except OSError:
                time.sleep(0.1)
        print(f"{'model':8} {'session.run ms':>15} {'V2 binary ms':>13} {'x':>6} {'V2 JSON ms':>11} {'x':>6}")
        for model in ("digits", "minilm"):
            feeds = inputs_for(model)
            path = Path(args.repository) / manifest["models"][model]["variants"]["fp32"]["file"]
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            raw = timed(lambda: session.run(None, feeds), args.runs)
            path = f"/v2/models/{model}/infer"
            connection = http.client.HTTPConnection("127.0.0.1", port)
            json_body = json.dumps({"inputs": [
                {"name": k, "shape": list(v.shape), "datatype": protocol.datatype_of(v), "data": v.ravel().tolist()}
                for k, v in feeds.items()]}).encode()
            header = json.dumps({"inputs": [
                {"name": k, "shape": list(v.shape), "datatype": protocol.datatype_of(v),
                 "parameters": {"binary_data_size": v.nbytes}} for k, v in feeds.items()],
                "parameters": {"binary_data_output": True}}).encode()
            binary_body = header + b"".join(v.tobytes() for v in feeds.values())
            binary = timed(lambda: post(connection, path, binary_body, {"Inference-Header-Content-Length": str(len(header))}), args.runs)
            plain = timed(lambda: post(connection, path, json_body, {"Content-Type": "application/json"}), args.runs)
            connection.close()
            print(f"{model:8} {raw:15.3f} {binary:13.3f} {binary / raw:6.2f} {plain:11.3f} {plain / raw:6.2f}")
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
