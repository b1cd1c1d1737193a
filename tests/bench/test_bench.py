"""`onnxport bench` end to end on iris (small and quick), and the performance page that charts it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

PROJECT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture
def benched(repository_copy, tmp_path):
    repository = repository_copy(models=["iris"])
    report_path = tmp_path / "bench.json"
    run = subprocess.run(
        [sys.executable, "-m", "onnxport", "--repository", str(repository), "bench", "iris", "--runs", "3",
         "--runtimes", "wasm-1t,wasm", "--json", str(report_path)],
        cwd=PROJECT, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return repository, json.loads(report_path.read_text()), run.stdout


def test_bench_measures_every_path_and_keeps_the_latest_in_the_repository(benched):
    repository, report, printed = benched
    assert report["schema"] == "onnxport.bench" and report["machine"]["cores"] >= 1
    iris = report["models"]["iris"]
    for variant, v in iris["variants"].items():
        assert v["native"]["1"]["threads"] == 1 and v["native"]["1"]["median_ms"] > 0, variant
        assert v["native"]["all"]["median_ms"] > 0 and v["native"]["all"]["p90_ms"] >= v["native"]["all"]["median_ms"]
    trip = iris["server"]["round_trip"]
    assert trip["json"]["median_ms"] > 0 and trip["binary"]["median_ms"] > 0
    for key in ("throughput_batching_off", "throughput_batching_on"):
        assert [r["clients"] for r in iris["server"][key]] == [1, 4, 16]
        assert all(r["requests_per_s"] > 0 and "errors" not in r for r in iris["server"][key])
    browser = [r for r in report["browser"]["results"] if r["status"] == "ok"]
    assert {(r["variant"], r["runtime"]) for r in browser} == {(v, rt) for v in iris["variants"] for rt in ("wasm-1t", "wasm")}
    for r in browser:
        assert r["cold"]["total_ms"] >= r["cold"]["create_ms"] > 0
        assert r["cached"]["source"] == "cache", "the second start must load the model from the Cache API"
        assert r["warm"]["median_ms"] > 0
    assert iris["operator_profile"] and all("op" in p for p in iris["operator_profile"])
    assert isinstance(report["recommendations"]["dynamic_batching"]["iris"], bool)
    assert json.loads((repository / "bench.json").read_text())["models"].keys() == report["models"].keys()
    assert "x native fp32 1t" in printed and "dynamic batching recommended for" in printed


def test_the_performance_page_charts_the_latest_bench(benched, serve_repository, open_tab):
    repository, _, _ = benched
    tab = open_tab("#/performance", base_url=serve_repository(repository))
    expect(tab.page.locator("[data-testid=latency-chart-iris] svg rect")).not_to_have_count(0)
    expect(tab.page.locator("[data-testid=throughput-chart-iris] svg path")).to_have_count(2)
    expect(tab.page.locator("[data-testid=size-chart] svg")).to_have_count(1)
    assert tab.console_errors == []


def test_without_a_bench_the_page_says_how_to_make_one(repository_copy, serve_repository, open_tab):
    tab = open_tab("#/performance", base_url=serve_repository(repository_copy(models=["iris"])))
    expect(tab.page.locator("[data-testid=no-bench]")).to_contain_text("onnxport bench")
    assert tab.console_errors == []


def test_bench_on_ray_adds_its_rows_beside_waitress(repository_copy, tmp_path):
    """`onnxport bench --engine ray --replicas 1`: the same throughput table on a real local Ray cluster."""
    repository = repository_copy(models=["iris"])
    report_path = tmp_path / "bench.json"
    run = subprocess.run(
        [sys.executable, "-m", "onnxport", "--repository", str(repository), "bench", "iris", "--runs", "3",
         "--runtimes", "", "--engine", "ray", "--replicas", "1", "--json", str(report_path)],
        cwd=PROJECT, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(report_path.read_text())
    rows = report["models"]["iris"]["server"]["engines"]
    assert [(r["engine"], r["replicas"], r["batching"]) for r in rows] == [("ray", 1, "off"), ("ray", 1, "on")]
    for row in rows:
        assert [t["clients"] for t in row["throughput"]] == [1, 4, 16]
        assert all(t["requests_per_s"] > 0 and "errors" not in t for t in row["throughput"]), row
    assert [s["replicas"] for s in report["ray_starts"]] == [1, 1] and all(s["seconds"] > 0 for s in report["ray_starts"])
    assert isinstance(report["recommendations"]["dynamic_batching_ray"]["iris"], bool)
    assert "engines side by side" in run.stdout and "ray       1         on" in run.stdout


def test_bench_refuses_bad_replica_counts(repository_copy):
    run = subprocess.run([sys.executable, "-m", "onnxport", "--repository", str(repository_copy(models=["iris"])), "bench",
                          "--engine", "ray", "--replicas", "1,zero"], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == ["onnxport: error: --replicas '1,zero': expected replica counts of at least 1, e.g. 1,2"]
