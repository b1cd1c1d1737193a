"""Floods from one network against a real `onnxport serve` (docs/reference/fleet.md, Poisoning): 600 fresh tokens from
one address move no honest verdict or median, a flood of made-up groups evicts no honest group, /metrics stays within a
size computed from the served repository, and a report of a file this server does not serve is a 422.

The attacker reports from 127.0.0.1; each honest device from a loopback /24 of its own (fixtures/fleet.py's
network_address), so the server sees real peers of distinct networks.
"""

from __future__ import annotations

import random
import re

import pytest
import requests

from fixtures.fleet import network_address, report, result, served_double, session_from, token
from fixtures.servers import free_port
from onnxport.accuracy.browser_runtimes import NAMES as BROWSER_RUNTIMES
from onnxport.serving.fleet.classes import metric_class, metric_class_count

DEVICE = {
    "engine": "Chrome",
    "engine_major": 131,
    "adapter_vendor": "google",
    "adapter_architecture": "swiftshader",
    "software_adapter": True,
    "cores": "2",
}
HONEST_NETWORKS = 10
CLIENTS_LINE = re.compile(r"^onnxport_fleet_clients\{(.*)\} \S+$", re.M)


@pytest.fixture
def server(tmp_path, spawn_server):
    """server(**settings) -> (base URL, the served file's sha256) of a real server on a one-model repository."""
    root, sha256 = served_double(tmp_path / "served")

    def start(**settings: object) -> tuple[str, str]:
        port = free_port()
        env = {"ONNXPORT_REQUEST_LOG": "off", **{f"ONNXPORT_{k.upper()}": str(v) for k, v in settings.items()}}
        return spawn_server(["serve", "--repository", str(root), "--port", str(port)], port, env=env), sha256

    return start


def honest(base: str, sha256: str, device: dict, runtime: str, warm: float, network: int, rng: random.Random) -> None:
    with session_from(network_address(network)) as session:
        answer = session.post(
            f"{base}/api/fleet/reports",
            timeout=10,
            json=report(token(rng), device, [result(sha256, "double", "fp32", runtime, "pass", warm, 1.0)]),
        )
    assert answer.status_code == 202, answer.text


def groups(base: str) -> list[dict]:
    return requests.get(f"{base}/api/fleet", timeout=10).json()["groups"]


def test_600_tokens_from_one_address_leave_the_honest_verdict_and_median(server):
    base, sha256 = server()
    rng = random.Random(0)
    for network in range(HONEST_NETWORKS):
        honest(base, sha256, DEVICE, "wasm", 10.0 + network, network, rng)
        honest(base, sha256, DEVICE, "webgpu", 4.0 + network / 10, network, rng)
    with requests.Session() as attacker:  # 127.0.0.1, within the default rate of 600 reports a minute
        statuses = {
            attacker.post(
                f"{base}/api/fleet/reports",
                timeout=10,
                json=report(
                    token(rng),
                    DEVICE,
                    [
                        result(sha256, "double", "fp32", "wasm", "fail", None, 0.1),
                        result(sha256, "double", "fp32", "webgpu", "pass", 0.01, 1.0),
                    ],
                ),
            ).status_code
            for _ in range(600)
        }
    assert statuses == {202}
    found = {g["runtime"]: g for g in groups(base)}
    wasm, webgpu = found["wasm"], found["webgpu"]
    assert (wasm["verdict"], wasm["clients"], wasm["fail"]) == ("pass", HONEST_NETWORKS + 1, 1)
    honest_webgpu = sorted(4.0 + n / 10 for n in range(HONEST_NETWORKS))
    median = webgpu["times"]["warm_run_ms"]["median"]
    assert honest_webgpu[2] <= median <= honest_webgpu[-3], (median, honest_webgpu)  # inside the honest quartiles


def test_a_report_of_a_file_this_server_does_not_serve_is_a_422(server):
    base, sha256 = server()
    other = "f" * 64
    answer = requests.post(
        f"{base}/api/fleet/reports",
        timeout=10,
        json=report("A" * 22, DEVICE, [result(other, "x" * 128, "fp32", "wasm", "pass", 1.0)]),
    )
    assert answer.status_code == 422
    assert answer.json() == {
        "error": f"field 'results[0].sha256': {other} is not a file this server serves (see /api/manifest)"
    }
    made_up_labels = requests.post(
        f"{base}/api/fleet/reports",
        timeout=10,
        json=report("A" * 22, DEVICE, [result(sha256, "x" * 128, "fp32", "wasm", "pass", 1.0)]),
    )
    assert made_up_labels.status_code == 422 and "is model 'double'" in made_up_labels.json()["error"]
    assert groups(base) == []


def flood(base: str, sha256: str, reports: int, rng: random.Random) -> dict[int, int]:
    """`reports` reports from 127.0.0.1, each a device class of made-up adapter strings and version on every
    browser runtime, failing: (status -> count)."""
    statuses: dict[int, int] = {}
    with requests.Session() as attacker:
        for _ in range(reports):
            made_up = {
                **DEVICE,
                "engine_major": rng.randrange(10_000),
                "software_adapter": rng.random() < 0.5,
                "adapter_vendor": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=64)),
                "adapter_architecture": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=64)),
            }
            answer = attacker.post(
                f"{base}/api/fleet/reports",
                timeout=10,
                json=report(
                    token(rng),
                    made_up,
                    [result(sha256, "double", "fp32", runtime, "fail", None, 0.1) for runtime in BROWSER_RUNTIMES],
                ),
            )
            statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
    return statuses


def test_a_flood_of_groups_from_one_network_evicts_no_honest_group(server):
    base, sha256 = server(fleet_max_groups=40)
    rng = random.Random(1)
    classes = [{**DEVICE, "engine_major": 100 + c} for c in range(10)]
    for cls in classes:  # 10 honest groups, each with k = 3 networks
        for network in range(3):
            honest(base, sha256, cls, "wasm", 9.0, network, rng)
    assert flood(base, sha256, 300, rng) == {202: 300}  # 1,200 results: far past fleet_max_groups
    kept = [g for g in groups(base) if g["class"] in classes]
    assert len(kept) == 10 and {g["verdict"] for g in kept} == {"pass"}, kept
    assert len(groups(base)) <= 40


def test_metrics_stay_within_a_size_computed_from_the_repository(server):
    # Every flooded group is let in (no hourly share), so only the labels' closed sets bound the scrape.
    base, sha256 = server(fleet_network_groups=100_000)
    rng = random.Random(2)
    for network in range(3):
        honest(base, sha256, DEVICE, "wasm", 9.0, network, rng)
    before = requests.get(f"{base}/metrics", timeout=30).text
    assert flood(base, sha256, 250, rng) == {202: 250}
    assert len(groups(base)) == 1 + 250 * len(BROWSER_RUNTIMES)
    scrape = requests.get(f"{base}/metrics", timeout=30).text
    manifest = requests.get(f"{base}/api/manifest", timeout=10).json()
    pairs = {(model, variant) for model, entry in manifest["models"].items() for variant in entry["variants"]}
    series = [dict(re.findall(r'(\w+)="([^"]*)"', labels)) for labels in CLIENTS_LINE.findall(scrape)]
    for labels in series:  # every label value from the repository or a closed set
        assert (labels["model"], labels["variant"]) in pairs and labels["runtime"] in BROWSER_RUNTIMES, labels
        assert labels["verdict"] in ("pass", "fail")
    flood_classes = {metric_class({**DEVICE, "adapter_vendor": "made-up", "software_adapter": s}) for s in (0, 1)}
    assert {s["device_class"] for s in series} == {metric_class(DEVICE)} | flood_classes
    assert len(series) <= 2 * len(BROWSER_RUNTIMES) * (1 + len(flood_classes))
    longest_line = max(len(line.encode()) for line in scrape.splitlines() if line.startswith("onnxport_fleet_clients"))
    bound = len(before.encode()) + len(pairs) * len(BROWSER_RUNTIMES) * metric_class_count() * 2 * longest_line
    assert len(scrape.encode()) <= bound
    assert len(scrape.encode()) - len(before.encode()) < 4096, "250 made-up classes add a few series at most"
