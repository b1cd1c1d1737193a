"""`onnxport bench`: native, server and browser paths of every served variant, in one run."""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path
from typing import Callable

from onnxport.bench.bench_report import shown
from onnxport.bench.browser import REFERENCE, browser_bench
from onnxport.bench.inputs import batch_one
from onnxport.bench.native import all_cores, native
from onnxport.bench.profile import native_operator_times, side_by_side
from onnxport.bench.ray_throughput import ray_rows
from onnxport.bench.report_types import BenchReport, Machine, RayRow, ServerFigures, VariantFigures
from onnxport.bench.v2_client import round_trips, throughput_table
from onnxport.errors import UsageError
from onnxport.harness import browser_engines
from onnxport.harness.process import running_server
from onnxport.repository import atomic, testdata, variant_record, variant_table
from onnxport.repository.layout import BENCH_FILE
from onnxport.repository.manifest import ModelEntry
from onnxport.repository.names import check_stored_name
from onnxport.repository.store import Repository

CLIENTS = (1, 4, 16)
# Dynamic batching is recommended where it gives this much more throughput at 16 clients.
BATCHING_GAIN = 1.1


def run_bench(
    repository: Path,
    models: list[str],
    runtimes: list[str],
    runs: int,
    browser: str | None,
    say: Callable[[str], None] = print,
    ray_replicas: list[int] | None = None,
    browsers: list[str] | None = None,
) -> BenchReport:
    """browsers: the engines the browser runtimes are measured in (harness/browser_engines.py; default: the installed
    ones); browser: Chromium's executable. ray_replicas: also measure the throughput table on Ray Serve with these
    replica counts."""
    repo = Repository(repository)
    manifest = repo.read_manifest()
    names = models or sorted(manifest["models"])
    unknown = [m for m in names if m not in manifest["models"]]
    if unknown:
        raise UsageError(f"unknown model {unknown[0]!r}; the repository has: {', '.join(sorted(manifest['models']))}")
    for name in names:  # each becomes a URL path (/v2/models/NAME/...): the name rule, before any measurement
        check_stored_name(name, repo.manifest_path)
    inputs = {name: batch_one(manifest["models"][name], _golden(repo, manifest["models"][name])) for name in names}
    report: BenchReport = {"schema": "onnxport.bench", "schema_version": 1, "machine": machine(), "models": {}}
    cores = all_cores()
    for name in names:
        entry = manifest["models"][name]
        say(f"native onnxruntime: {name}")
        variants: dict[str, VariantFigures] = {}
        fp32 = entry["variants"]["fp32"]
        fp32_bytes = fp32["bytes"] if variant_record.made(fp32) else None
        for variant, record in entry["variants"].items():
            if not variant_record.served(record):
                continue
            path = repo.path_of(record["file"])
            variants[variant] = {
                **variant_table.label_key(record, variant),  # what people are shown, where it is not the key
                "bytes": record["bytes"],
                "size_ratio": round(record["bytes"] / fp32_bytes, 4) if fp32_bytes else None,
                "native": {"1": native(path, inputs[name], 1, runs), "all": native(path, inputs[name], cores, runs)},
            }
        report["models"][name] = {"inputs": {k: list(v.shape) for k, v in inputs[name].items()}, "variants": variants}

    def first_rate(name: str) -> float:
        """Requests per second one client is expected to get: the model's native time plus a loopback round trip."""
        return 1000 / max(_fp32_ms(report, name) + 1.0, 1.0)

    for batching in ("none", "all"):
        with running_server(repository, extra_env={"ONNXPORT_DYNAMIC_BATCHING": batching}) as base:
            for name in names:
                route = f"/v2/models/{name}/versions/fp32/infer"
                server = report["models"][name].setdefault("server", {})
                if batching == "none":
                    say(f"server V2 round trips: {name}")
                    server["round_trip"] = round_trips(base, route, inputs[name], runs)
                say(f"server throughput, dynamic batching {'on' if batching == 'all' else 'off'}: {name}")
                measured = throughput_table(base, route, inputs[name], CLIENTS, first_rate(name))
                if batching == "all":
                    server["throughput_batching_on"] = measured
                else:
                    server["throughput_batching_off"] = measured
            if batching == "none" and runtimes:
                engine_names = browsers or browser_engines.parse(None)
                say(f"browser ({', '.join(engine_names)}; {', '.join(runtimes)}): cold start, cached start, warm runs")
                served = {name: list(report["models"][name]["variants"]) for name in names}
                labels = {name: shown(report["models"][name]["variants"]) for name in names}
                report["browsers"] = browser_bench(
                    base, engine_names, browser, served, runtimes, inputs, runs, say, labels
                )
                # The reference engine's section, where every reader of a single browser looks (the performance page).
                report["browser"] = report["browsers"].get(REFERENCE) or next(iter(report["browsers"].values()))
    if ray_replicas:
        ray = ray_rows(repository, names, inputs, CLIENTS, first_rate, ray_replicas, say)
        report["ray_starts"] = ray["starts"]
        for name, rows in ray["rows"].items():
            report["models"][name]["server"]["engines"] = rows
    for name, browser_ops in report.get("browser", {}).pop("profiles", {}).items():  # out of `browsers` too: one dict
        say(f"operator profiles ({shown(report['models'][name]['variants']).get('fp32', 'fp32')}, 1 thread): {name}")
        fp32_file = repo.path_of(variant_record.file_of(manifest["models"][name]["variants"]["fp32"]))
        native_ops = native_operator_times(fp32_file, inputs[name], 1)
        report["models"][name]["operator_profile"] = side_by_side(native_ops, browser_ops)
    report["recommendations"] = {
        "dynamic_batching": {name: batching_wins(report["models"][name]["server"]) for name in names}
    }
    if ray_replicas:
        report["recommendations"]["dynamic_batching_ray"] = {
            name: ray_batching_wins(report["models"][name]["server"]["engines"]) for name in names
        }
    return report


def batching_wins(server: ServerFigures) -> bool:
    off = {r["clients"]: r for r in server["throughput_batching_off"]}
    on = {r["clients"]: r for r in server["throughput_batching_on"]}
    lone = off[1]["median_ms"] or 1e-9
    return on[16]["requests_per_s"] >= BATCHING_GAIN * off[16]["requests_per_s"] and on[16]["p90_ms"] <= 3 * lone


def ray_batching_wins(rows: list[RayRow]) -> bool:
    """The same rule as batching_wins, on Ray's rows with the most replicas measured."""
    most = max(r["replicas"] for r in rows)
    by_batching = {r["batching"]: r["throughput"] for r in rows if r["replicas"] == most}
    return batching_wins({"throughput_batching_off": by_batching["off"], "throughput_batching_on": by_batching["on"]})


def save_latest(repository: Path, report: BenchReport, say: Callable[[str], None] = print) -> Path:
    """The repository keeps the latest bench: the server's batching and the performance page read it."""
    target = Path(repository) / BENCH_FILE
    with atomic.lock(repository, wait=True, waiting=say):  # a build may be writing: bench waits its turn
        atomic.write_json_atomically(target, report)
    return target


def machine() -> Machine:
    cpu = ""
    try:
        cpu = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu,
        "cores": all_cores(),
        "onnxruntime": metadata.version("onnxruntime"),
    }


def _fp32_ms(report, name) -> float:
    return report["models"][name]["variants"].get("fp32", {}).get("native", {}).get("all", {}).get("median_ms", 1.0)


def _golden(repo: Repository, entry: ModelEntry) -> dict:
    return testdata.read_golden(repo.root, entry)[0][0]
