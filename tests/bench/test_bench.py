"""`onnxport bench` end to end on iris (small and quick), and the performance page that charts it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fixtures.doc_keys import BENCH, BENCH_MAPS, assert_documented

PROJECT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_bench_measures_every_path_and_keeps_the_latest_in_the_repository(iris_bench):
    repository, report, printed = iris_bench
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
    assert list(report["browsers"]) == ["chromium"] and report["browser"] == report["browsers"]["chromium"]
    assert report["browser"]["engine"] == "chromium" and report["browser"]["version"]
    assert "HeadlessChrome" in report["browser"]["device"]["userAgent"] and report["browser"]["threads"] >= 1
    browser = [r for r in report["browser"]["results"] if r["status"] == "ok"]
    expected = {(v, rt) for v in iris["variants"] for rt in ("wasm-1t", "wasm")}
    assert {(r["variant"], r["runtime"]) for r in browser} == expected
    for r in browser:
        assert r["browser"] == "chromium"
        assert r["cold"]["total_ms"] >= r["cold"]["create_ms"] > 0
        assert r["cached"]["source"] == "cache", "the second start must load the model from the Cache API"
        assert r["warm"]["median_ms"] > 0
    assert iris["operator_profile"] and all("op" in p for p in iris["operator_profile"])
    assert isinstance(report["recommendations"]["dynamic_batching"]["iris"], bool)
    assert json.loads((repository / "bench.json").read_text())["models"].keys() == report["models"].keys()
    assert "x native fp32 1t" in printed and "dynamic batching recommended for" in printed


# What the page's Chart.js charts hold (Chart.getChart: the UMD bundle's global), read through page.evaluate.
READ_CHART = """testid => {
  const chart = Chart.getChart(document.querySelector(`[data-testid="${testid}"] canvas`));
  if (!chart) return null;
  return {
    type: chart.config.type, labels: chart.data.labels,
    datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })),
    y: {
      type: chart.scales.y.type, title: chart.options.scales.y.title.text,
      ticks: chart.scales.y.ticks.map((t) => t.label),
    },
    x: { title: chart.options.scales.x.title.text, ticks: chart.scales.x.ticks.map((t) => t.label) },
    legend: chart.legend.legendItems.map((item) => item.text),
  };
}"""

# The viewport position of one bar's middle: Chart.js elements are in the canvas's CSS pixels.
BAR_POSITION = """([testid, series, label]) => {
  const canvas = document.querySelector(`[data-testid="${testid}"] canvas`);
  const chart = Chart.getChart(canvas);
  const meta = chart.getDatasetMeta(chart.data.datasets.findIndex((d) => d.label === series));
  const bar = meta.data[chart.data.labels.indexOf(label)];
  const box = canvas.getBoundingClientRect();
  return { x: box.left + bar.x, y: box.top + (bar.y + bar.base) / 2 };
}"""

TOOLTIP = """testid => {
  const tooltip = Chart.getChart(document.querySelector(`[data-testid="${testid}"] canvas`)).tooltip;
  if (!tooltip.opacity || !tooltip.dataPoints?.length) return null;
  return { title: tooltip.title, lines: tooltip.body.flatMap((b) => b.lines),
           points: tooltip.dataPoints.map((p) => ({ series: p.dataset.label, label: p.label, raw: p.raw })) };
}"""


def hover_bar(page, testid: str, series: str, label: str) -> dict:
    """Move the mouse onto a bar and return the tooltip Chart.js shows for it (events arrive on an animation frame)."""
    page.get_by_test_id(testid).scroll_into_view_if_needed()
    position = page.evaluate(BAR_POSITION, [testid, series, label])
    page.mouse.move(position["x"], position["y"])
    deadline = time.monotonic() + 10
    while (tooltip := page.evaluate(TOOLTIP, testid)) is None and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert tooltip is not None, f"no tooltip on {testid} after hovering {series} {label}"
    return tooltip


def tooltip_figure(lines: list[str], series: str, unit: str) -> float:
    """The number the tooltip prints for a series ("native all: 0.0123 ms" -> 0.0123)."""
    matches = [re.fullmatch(rf"{re.escape(series)}: (\S+) {unit}(?: .*)?", line) for line in lines]
    found = [float(m[1]) for m in matches if m]
    assert len(found) == 1, f"expected one {series!r} line in the tooltip, got {lines}"
    return found[0]


def test_every_key_of_bench_json_is_documented(iris_bench):
    """docs/reference/manifest.md describes every key of the bench the tests above share (tests/fixtures/doc_keys.py
    says what documented means)."""
    repository, _, _ = iris_bench
    bench = json.loads((repository / "bench.json").read_text())
    assert bench["models"]["iris"]["operator_profile"] and bench["browser"]["results"]
    assert_documented(bench, "bench.json", BENCH, BENCH_MAPS)


def test_the_performance_page_charts_the_latest_bench(iris_bench, serve_repository, open_tab):
    repository, report, _ = iris_bench
    tab = open_tab("#/performance", base_url=serve_repository(repository))
    for testid in ("latency-chart-iris", "throughput-chart-iris", "size-chart"):
        expect(tab.page.locator(f"[data-testid={testid}] canvas")).to_have_count(1)
    latency = tab.page.evaluate(READ_CHART, "latency-chart-iris")
    assert latency["type"] == "bar" and latency["labels"] == list(report["models"]["iris"]["variants"])
    assert latency["legend"] == ["native 1t", "native all", "wasm-1t", "wasm"]  # no WebGPU in this bench
    assert latency["y"]["type"] == "linear" and "ms" in latency["y"]["title"] and latency["y"]["ticks"]
    assert latency["x"]["title"] == "variant"
    throughput = tab.page.evaluate(READ_CHART, "throughput-chart-iris")
    assert throughput["type"] == "line" and throughput["x"]["ticks"] == ["1", "4", "16"]
    assert throughput["legend"] == ["waitress, batching off", "waitress, batching on"]
    off = [r["requests_per_s"] for r in report["models"]["iris"]["server"]["throughput_batching_off"]]
    assert throughput["datasets"][0]["data"] == off
    size = tab.page.evaluate(READ_CHART, "size-chart")
    assert size["labels"] == ["iris"] and size["y"]["type"] == "linear" and size["y"]["title"] == "size, MB"
    assert tab.console_errors == []


def test_a_chart_shows_the_bench_figures_on_hover(iris_bench, serve_repository, open_tab):
    """Hover the iris fp32 "native all" latency bar and the fp32 size bar: the tooltips print the bench's figures."""
    repository, report, _ = iris_bench
    fp32 = report["models"]["iris"]["variants"]["fp32"]
    tab = open_tab("#/performance", base_url=serve_repository(repository))
    expect(tab.page.locator("[data-testid=size-chart] canvas")).to_have_count(1)

    latency = hover_bar(tab.page, "latency-chart-iris", "native all", "fp32")
    assert latency["title"] == ["iris fp32"]
    native_all = fp32["native"]["all"]["median_ms"]
    assert {"series": "native all", "label": "fp32", "raw": native_all} in latency["points"]
    assert tooltip_figure(latency["lines"], "native all", "ms") == pytest.approx(native_all, rel=5e-3)  # 3 digits
    wasm = next(
        r for r in report["browser"]["results"] if (r["model"], r["variant"], r["runtime"]) == ("iris", "fp32", "wasm")
    )
    assert tooltip_figure(latency["lines"], "wasm", "ms") == pytest.approx(wasm["warm"]["median_ms"], rel=5e-3)

    size = hover_bar(tab.page, "size-chart", "fp32", "iris")
    assert {"series": "fp32", "label": "iris", "raw": fp32["bytes"] / 1024**2} in size["points"]
    assert tooltip_figure(size["lines"], "fp32", "MB") == pytest.approx(fp32["bytes"] / 1024**2, rel=5e-3)
    assert tab.console_errors == []


# A scatter chart's series (label, axis, points) and its y axes' titles and order on the page, top first.
READ_FRONTIER = """testid => {
  const chart = Chart.getChart(document.querySelector(`[data-testid="${testid}"] canvas`));
  if (!chart) return null;
  return {
    type: chart.config.type, title: chart.options.plugins.title.text,
    datasets: chart.data.datasets.map((d) => ({ label: d.label, axis: d.yAxisID, line: !!d.frontierLine,
      points: d.data.map((p) => ({ name: p.name, bytes: p.bytes, x: p.x, y: p.y, create: p.create, first: p.first,
                                   download: p.download })) })),
    axes: ["yCold", "yWarm"].map((id) => ({ id, type: chart.scales[id].type, title: chart.options.scales[id].title.text,
                                           top: chart.scales[id].top, ticks: chart.scales[id].ticks.length })),
    legend: chart.legend.legendItems.map((item) => item.text),
  };
}"""


def test_the_performance_page_charts_the_size_cold_start_warm_run_frontier(iris_bench, serve_repository, open_tab):
    """The frontier chart of iris: a point per measured file and browser runtime, its figures the bench's, the cold
    start's download at the stated bandwidth, redrawn when the bandwidth is changed."""
    repository, report, _ = iris_bench
    tab = open_tab("#/performance", base_url=serve_repository(repository))
    expect(tab.page.locator("[data-testid=frontier-chart-iris] canvas")).to_have_count(1)
    chart = tab.page.evaluate(READ_FRONTIER, "frontier-chart-iris")
    assert chart["type"] == "scatter" and "10 Mbit/s" in chart["title"], chart["title"]
    cold_axis, warm_axis = chart["axes"]
    assert cold_axis["type"] == warm_axis["type"] == "logarithmic" and "10 Mbit/s" in cold_axis["title"]
    assert cold_axis["top"] < warm_axis["top"] and cold_axis["ticks"] and warm_axis["ticks"]  # cold above warm
    assert chart["legend"] == ["wasm-1t cold start", "wasm-1t warm run", "wasm cold start", "wasm warm run"]
    rows = [r for r in report["browser"]["results"] if r["model"] == "iris" and r["status"] == "ok"]
    for runtime in ("wasm-1t", "wasm"):
        mine = [r for r in rows if r["runtime"] == runtime]
        cold = next(d for d in chart["datasets"] if d["label"] == f"{runtime} cold start")
        warm = next(d for d in chart["datasets"] if d["label"] == f"{runtime} warm run")
        assert len(cold["points"]) == len(warm["points"]) == len(mine) > 0
        # Cold: the download at 10 Mbit/s (1,250 bytes a ms) + the cold start's creation and first run, no other figure.
        expected = sorted(r["bytes"] / 1250 + r["cold"]["create_ms"] + r["cold"]["first_run_ms"] for r in mine)
        assert sorted(p["y"] for p in cold["points"]) == pytest.approx(expected)
        assert sorted(p["y"] for p in warm["points"]) == sorted(r["warm"]["median_ms"] for r in mine)
        lines = [d for d in chart["datasets"] if d["line"] and d["label"].startswith(f"{runtime} ")]
        assert len(lines) == 2 and all(d["points"] for d in lines)  # a frontier has at least one point
    tab.page.get_by_test_id("frontier-chart-iris-bandwidth").select_option("100")
    redrawn = tab.page.evaluate(READ_FRONTIER, "frontier-chart-iris")
    assert "100 Mbit/s" in redrawn["title"] and "100 Mbit/s" in redrawn["axes"][0]["title"]
    point = redrawn["datasets"][0]["points"][0]
    assert point["download"] == pytest.approx(point["bytes"] * 8 / 100_000)
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
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(repository),
            "bench",
            "iris",
            "--runs",
            "3",
            "--runtimes",
            "",
            "--engine",
            "ray",
            "--replicas",
            "1",
            "--json",
            str(report_path),
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(report_path.read_text())
    rows = report["models"]["iris"]["server"]["engines"]
    assert [(r["engine"], r["replicas"], r["batching"]) for r in rows] == [("ray", 1, "off"), ("ray", 1, "on")]
    for row in rows:
        assert [t["clients"] for t in row["throughput"]] == [1, 4, 16]
        assert all(t["requests_per_s"] > 0 and "errors" not in t for t in row["throughput"]), row
    assert [s["replicas"] for s in report["ray_starts"]] == [1, 1]
    assert all(s["seconds"] > 0 for s in report["ray_starts"])
    assert isinstance(report["recommendations"]["dynamic_batching_ray"]["iris"], bool)
    assert "engines side by side" in run.stdout and "ray       1         on" in run.stdout


def test_bench_refuses_bad_replica_counts(repository_copy):
    repository = repository_copy(models=["iris"])
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(repository),
            "bench",
            "--engine",
            "ray",
            "--replicas",
            "1,zero",
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2  # a usage error
    assert run.stderr.strip().splitlines() == [
        "onnxport: error: --replicas '1,zero': expected replica counts of at least 1, e.g. 1,2"
    ]
