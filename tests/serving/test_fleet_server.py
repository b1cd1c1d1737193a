"""A simulated fleet through a real `onnxport serve` (reports as HTTP requests): 1,000 devices in 10 classes,
30% of them lying, cannot make a wrong runtime look right, a good one look wrong, or its times move past
the honest devices' quartiles (docs/reference/fleet.md)."""

from __future__ import annotations

import random

import onnx
import pytest
import requests
from onnx import TensorProto, helper

from fixtures.fleet import LIAR_TIME_MS, network_address, report, result, session_from, simulate_fleet, token
from fixtures.servers import free_port
from onnxport.serving.fleet.classes import class_key

SWIFTSHADER = {
    "engine": "Chrome",
    "engine_major": 131,
    "adapter_vendor": "google",
    "adapter_architecture": "swiftshader",
    "software_adapter": True,
    "cores": "2",
}
SMALL_CLASS = {
    "engine": "Firefox",
    "engine_major": 128,
    "adapter_vendor": "",
    "adapter_architecture": "",
    "software_adapter": True,
    "cores": "17+",
}


def double_model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])],
        "double",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture
def fleet_server(imported_repository, spawn_server):
    """A real server on a one-model repository that takes a fleet's rate from 127.0.0.1: (base URL, files)."""
    repository = imported_repository(double_model(), "double")
    port = free_port()
    base = spawn_server(
        ["serve", "--repository", str(repository), "--port", str(port)],
        port,
        env={"ONNXPORT_FLEET_ADDRESS_RATE": "100000", "ONNXPORT_REQUEST_LOG": "off"},
    )
    sha256 = requests.get(f"{base}/api/manifest", timeout=10).json()["models"]["double"]["variants"]["fp32"]["sha256"]
    return base, {runtime: (sha256, "double", "fp32") for runtime in ("webgpu", "wasm", "wasm-1t")}


def groups_by(fleet: dict) -> dict[tuple[str, str], dict]:
    return {(g["class_key"], g["runtime"]): g for g in fleet["groups"]}


def test_a_fleet_with_30_percent_liars_steers_no_device_wrong(fleet_server):
    base, files = fleet_server
    summary = simulate_fleet(
        base, SWIFTSHADER, files, wrong_runtimes={"webgpu"}, liars=0.3, devices=1000, classes=10, seed=0
    )
    assert (summary.devices, summary.liars, len(summary.devices_by_class)) == (1000, 300, 10)
    # k - 1 honest failures of a good runtime in a small class, beside two passes: never a fail
    rng = random.Random(1)
    sha256, model, variant = files["wasm"]
    answers = []
    for network, verdict in enumerate(("fail", "fail", "pass", "pass"), start=5000):
        with session_from(network_address(network)) as session:
            answers.append(
                session.post(
                    f"{base}/api/fleet/reports",
                    timeout=10,
                    json=report(token(rng), SMALL_CLASS, [result(sha256, model, variant, "wasm", verdict, 9.0, 0.5)]),
                )
            )
    assert [a.status_code for a in answers] == [202] * 4
    fleet = requests.get(f"{base}/api/fleet", timeout=10).json()
    k = fleet["k"]
    assert (fleet["schema"], k, fleet["fail_share"], fleet["reports"]) == (1, 3, 0.667, 1004)
    groups = groups_by(fleet)
    assert len(groups) == 10 * 3 + 1
    mine = summary.of_interest

    wrong = groups[mine, "webgpu"]
    assert (wrong["verdict"], wrong["clients"], wrong["fail"], wrong["pass"]) == ("fail", 100, 70, 30)
    assert wrong["metric"] == {"name": "cosine", "median": 0.42}
    # its only passes are the liars': their time is published, but the plan reads no times of a failed group
    assert wrong["times"]["warm_run_ms"]["median"] == LIAR_TIME_MS
    for key in summary.devices_by_class:
        for runtime in ("wasm", "wasm-1t") + (() if key == mine else ("webgpu",)):
            group = groups[key, runtime]
            assert group["verdict"] == "pass", (key, runtime, group)
            assert group["clients"] == summary.devices_by_class[key] == 100
            # the liars who fake fails for the good runtimes; the wrong one's liars fake passes everywhere
            assert group["fail"] == (0 if runtime == "webgpu" else summary.liars_by_class[key] // 2)
            honest = sorted(summary.honest_warm[key, runtime])
            quartiles = [honest[len(honest) // 4], honest[3 * len(honest) // 4]]
            median = group["times"]["warm_run_ms"]["median"]
            assert quartiles[0] <= median <= quartiles[1], (key, runtime, median, quartiles)
            assert group["times"]["warm_run_ms"]["clients"] == 100 - group["fail"]
    small = groups[class_key(SMALL_CLASS), "wasm"]
    assert (small["fail"], small["pass"]) == (k - 1, 2) and small["verdict"] != "fail"


def test_bad_reports_leave_the_server_serving_and_show_in_metrics(fleet_server):
    base, files = fleet_server
    sha256, model, variant = files["wasm"]
    good = report("A" * 22, SWIFTSHADER, [result(sha256, model, variant, "wasm", "pass", 2.0, 1.0)])
    with requests.Session() as session:
        statuses = [
            session.post(f"{base}/api/fleet/reports", json=good, timeout=10).status_code,
            session.post(f"{base}/api/fleet/reports", json={**good, "extra": 1}, timeout=10).status_code,
            session.post(
                f"{base}/api/fleet/reports",
                data=b"\x00" * 20_000,
                timeout=10,
                headers={"Content-Type": "application/json"},
            ).status_code,
            session.post(
                f"{base}/api/fleet/reports", data="{", timeout=10, headers={"Content-Type": "application/json"}
            ).status_code,
        ]
        statuses += [session.post(f"{base}/api/fleet/reports", json=good, timeout=10).status_code for _ in range(20)]
    assert statuses == [202, 422, 413, 400] + [202] * 19 + [429]  # the token's 20 a minute
    inference = requests.post(
        f"{base}/v2/models/double/infer",
        timeout=10,
        json={"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1.5, 2.0]}]},
    )
    assert inference.status_code == 200 and inference.json()["outputs"][0]["data"] == [3.0, 4.0]
    metrics = requests.get(f"{base}/metrics", timeout=10).text
    assert 'onnxport_fleet_reports_total{outcome="accepted"} 20.0' in metrics
    assert 'onnxport_fleet_reports_total{outcome="invalid"} 3.0' in metrics
    assert 'onnxport_fleet_reports_total{outcome="rate_limited"} 1.0' in metrics
    assert (
        'onnxport_fleet_clients{device_class="Chrome · 2 cores · google swiftshader (software)",'
        'model="double",runtime="wasm",variant="fp32",verdict="pass"} 1.0'
    ) in metrics
