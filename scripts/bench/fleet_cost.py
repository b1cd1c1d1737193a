"""What the fleet costs the server (docs/reference/fleet.md): folds N reports into a store on disk, as ~1,000 devices
in 12 classes report 5 models on 3 runtimes, and prints the microseconds per report folded (the median of
batches of 1,000), the time to build GET /api/fleet's document, and the database's bytes after the reports
and after VACUUM.

    PYTHONPATH=server .venv/bin/python scripts/bench/fleet_cost.py [--reports 100000] [--db /tmp/fleet-cost.sqlite3]
"""

from __future__ import annotations

import argparse
import base64
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

from onnxport.serving.fleet.reports import Report
from onnxport.serving.fleet.store import FleetStore

BATCH = 1000
RUNTIMES = ("webgpu", "wasm", "wasm-1t")
ENGINES = (("Chrome", 131), ("Chrome", 140), ("Firefox", 128), ("Safari", 18))
ADAPTERS = (("google", "swiftshader", True), ("nvidia", "ampere", False), ("intel", "gen-12lp", False))


def fleet(rng: random.Random, devices: int) -> list[tuple[str, dict, str]]:
    """(token, class, network) per device: each device on a network of its own (the store takes its name)."""
    classes = [
        {
            "engine": e,
            "engine_major": m,
            "adapter_vendor": v,
            "adapter_architecture": a,
            "software_adapter": s,
            "cores": c,
        }
        for (e, m) in ENGINES
        for (v, a, s) in ADAPTERS
        for c in ("3-4",)
    ]  # 12 classes
    return [
        (base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode(), classes[i % len(classes)], f"network-{i}")
        for i in range(devices)
    ]


def report(rng: random.Random, client: str, device: dict, models: list[tuple[str, str]]) -> Report:
    model, sha256 = rng.choice(models)
    results = [
        {
            "model": model,
            "variant": "fp32",
            "form": None,
            "sha256": sha256,
            "runtime": runtime,
            "threads": 4,
            "verdict": "fail" if rng.random() < 0.05 else "pass",
            "metric": {"name": "cosine", "value": rng.uniform(0.9, 1.0), "limit": 0.99},
            "create_ms": rng.uniform(50, 500),
            "first_run_ms": rng.uniform(5, 50),
            "warm_run_ms": rng.uniform(1, 20),
        }
        for runtime in rng.sample(RUNTIMES, rng.randint(1, 3))
    ]
    return Report.model_validate({"schema": 1, "client": client, "device": device, "results": results})


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--db", type=Path, default=Path("/tmp/fleet-cost.sqlite3"))
    args = parser.parse_args()
    for old in args.db.parent.glob(args.db.name + "*"):
        old.unlink()
    rng = random.Random(0)
    devices = fleet(rng, args.devices)
    models = [(f"model-{i}", f"{rng.getrandbits(256):064x}") for i in range(5)]
    store = FleetStore(args.db)
    per_report = []
    for start in range(0, args.reports, BATCH):
        batch = [
            (report(rng, client, device, models), network)
            for client, device, network in (rng.choice(devices) for _ in range(min(BATCH, args.reports - start)))
        ]
        began = time.perf_counter()
        for one, network in batch:
            store.fold(one, network)
        per_report.append((time.perf_counter() - began) / len(batch) * 1e6)
    builds = []
    for _ in range(5):
        store._published = None  # as after a new report to a store never read
        began = time.perf_counter()
        document = store.published()
        builds.append((time.perf_counter() - began) * 1e3)
    store.close()
    with sqlite3.connect(args.db) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        votes = db.execute("SELECT COUNT(*) FROM votes").fetchone()[0]
    after = size(args.db)
    with sqlite3.connect(args.db) as db:
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # VACUUM wrote the whole file into the WAL
    print(f"{args.reports} reports from {args.devices} devices: {len(document['groups'])} groups, {votes} votes")
    print(
        f"fold: {statistics.median(per_report):.1f} us per report (median of {len(per_report)} batches of "
        f"{BATCH}; first batch {per_report[0]:.1f}, last {per_report[-1]:.1f})"
    )
    print(f"GET /api/fleet build: {statistics.median(builds):.1f} ms (median of 5)")
    print(f"db: {after} bytes after the reports, {size(args.db)} after VACUUM")
    return 0


if __name__ == "__main__":
    sys.exit(main())
