"""The operator's fleet page (#/fleet, issue 36) in Chromium, on a real `onnxport serve` that was sent real reports
over HTTP (POST /api/fleet/reports, docs/reference/fleet.md): per device class a table of each model, variant and
runtime's counts and verdict in words, and a chart of the times; the empty state of a server with no reports says how
pages report; a server with reports off (fleet_reports false: /api/fleet answers 204) shows an error box saying so. A
contract-shaped document served in place of the server's checks the charts' choices (which time, log axis).

Fixtures: `fleet_server` (this module: a server on the demo repository with its own in-memory store),
`open_tab` (tests/fixtures/browser.py), `demo_repository`, `demo_manifest`.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from fixtures import fleet
from fixtures.playground import PAGE_TIMEOUT_MS, Tab, by_testid, wait_for_probe
from fixtures.servers import start_test_server
from onnxport.harness.process import free_port

K = 3
NO_REPORTS = (
    "No reports yet. Pages report when they connect with connect(server, { report: true }) "
    "— see docs/reference/fleet.md."
)
REPORTS_OFF = "This server has fleet reports off (setting fleet_reports): GET /api/fleet answered 204, no fleet."
WRONG_WORDS = re.compile(r"\b(?:null|undefined|NaN)\b|\[object Object\]")
CHROME = {
    "engine": "Chrome",
    "engine_major": 131,
    "adapter_vendor": "google",
    "adapter_architecture": "swiftshader",
    "software_adapter": True,
    "cores": "2",
}
WEBKIT = {
    "engine": "WebKitGTK",
    "engine_major": None,
    "adapter_vendor": "none",
    "adapter_architecture": "",
    "software_adapter": False,
    "cores": "3-4",
}
FIREFOX = {
    "engine": "Firefox",
    "engine_major": 128,
    "adapter_vendor": "",
    "adapter_architecture": "",
    "software_adapter": True,
    "cores": "2",
}
CHROME_KEY = "Chrome 131 · 2 cores · google swiftshader (software)"
WEBKIT_KEY = "WebKitGTK · 3-4 cores · no WebGPU"
FIREFOX_KEY = "Firefox 128 · 2 cores · unnamed WebGPU adapter (software)"


def serve(demo_repository, folder, **settings: str):
    """A real `onnxport serve` on the demo repository with its own fleet store in memory and these settings."""
    port = free_port()
    env = {
        "ONNXPORT_FLEET_DB": ":memory:",
        "ONNXPORT_FLEET_MIN_CLIENTS": str(K),
        **{f"ONNXPORT_{name.upper()}": value for name, value in settings.items()},
    }
    return start_test_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)], port, folder / "server.log", env=env
    )


@pytest.fixture
def fleet_server(demo_repository, tmp_path):
    """fleet_server(**settings) -> base URL of a fresh server (stopped after the test)."""
    servers = []

    def start(**settings: str) -> str:
        folder = tmp_path / f"server-{len(servers)}"
        folder.mkdir()
        servers.append(serve(demo_repository, folder, **settings))
        return servers[-1].base_url

    yield start
    for server in servers:
        server.stop()


def result(
    manifest: dict, model: str, runtime: str, verdict: str, *, metric: float | None = None, warm: float | None = None
) -> dict:
    """One result of a report, for the demo build's file of `model`'s fp32."""
    return fleet.result(
        manifest["models"][model]["variants"]["fp32"]["sha256"], model, "fp32", runtime, verdict, warm, metric
    )


NETWORKS = itertools.count()  # each report from a network of its own: the server counts networks, not tokens


def post_report(base_url: str, device: dict, results: list[dict]) -> dict:
    """POST one report as a page does (a browser profile's random token), from a network of its own
    (fixtures/fleet.py's network_address), and return the server's 202 answer."""
    body = fleet.report(secrets.token_urlsafe(16), device, results)
    with fleet.session_from(fleet.network_address(next(NETWORKS))) as session:
        answer = session.post(f"{base_url}/api/fleet/reports", json=body, timeout=30)
    if answer.status_code != 202:
        pytest.fail(f"POST /api/fleet/reports: HTTP {answer.status_code}: {answer.text[:2000]}", pytrace=False)
    return answer.json()


def get_fleet(base_url: str) -> dict:
    with urllib.request.urlopen(f"{base_url}/api/fleet") as response:
        return json.loads(response.read())


def open_fleet(open_tab, base_url: str, setup=None) -> Tab:
    tab = open_tab("#/fleet", base_url=base_url, setup=setup)
    expect(tab.page.get_by_role("heading", name="Fleet", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    wait_for_probe(tab.page)
    return tab


def page_text(tab: Tab) -> str:
    text = tab.page.locator("#main").inner_text()
    wrong = [line for line in text.splitlines() if WRONG_WORDS.search(line)]
    assert not wrong, f"the fleet page shows a missing value in: {wrong}"
    return text


def class_rows(tab: Tab, key: str) -> list[list[str]]:
    """The cells of each row of a class's table."""
    section = tab.page.locator(f'[data-testid=fleet-class][data-class="{key}"]')
    expect(section).to_be_visible()
    return [[cell.inner_text() for cell in row.locator("td").all()] for row in section.locator("tbody tr").all()]


def drawn_pixels(tab: Tab, testid: str) -> int:
    """How many pixels of the chart's canvas are painted (0: Chart.js drew nothing)."""
    return tab.page.evaluate(
        """(testid) => {
      const canvas = document.querySelector(`[data-testid="${testid}"] canvas`);
      if (!canvas || !globalThis.Chart.getChart(canvas)) return 0;
      const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
      let painted = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i]) painted += 1;
      return painted;
    }""",
        testid,
    )


def test_the_page_shows_each_class_its_verdicts_and_a_time_chart(fleet_server, demo_manifest, open_tab):
    base_url = fleet_server()
    # Chrome on SwiftShader: minilm's WebGPU fails on 4 of 4 devices, its WebAssembly passes on 4 with times.
    for i in range(4):
        post_report(
            base_url,
            CHROME,
            [
                result(demo_manifest, "minilm", "webgpu", "fail", metric=0.40 + 0.01 * i),
                result(demo_manifest, "minilm", "wasm", "pass", warm=30.0 + i),
            ],
        )
    # WebKitGTK: iris passes on 2 devices, too few for a verdict or a time.
    for _ in range(2):
        post_report(base_url, WEBKIT, [result(demo_manifest, "iris", "wasm", "pass", warm=0.5)])
    # Firefox: minilm's single-threaded WebAssembly passes on 2 and fails on 2: mixed.
    for i in range(4):
        verdict = "pass" if i % 2 else "fail"
        post_report(
            base_url,
            FIREFOX,
            [result(demo_manifest, "minilm", "wasm-1t", verdict, metric=None if verdict == "pass" else 0.5, warm=50.0)],
        )
    published = get_fleet(base_url)

    tab = open_fleet(open_tab, base_url)
    summary = by_testid(tab.page, "fleet-summary")
    expect(summary).to_have_text(
        re.compile(
            rf"^{published['reports']} reports? accepted · k = {K} .* · 3 device classes · 2 models · verdicts: "
            r"1 fail, 1 mixed, 1 pass, 1 few$"
        )
    )
    expect(tab.page.locator("[data-testid=fleet-class]")).to_have_count(3)

    chrome = class_rows(tab, CHROME_KEY)
    assert [row[:7] for row in chrome] == [
        ["minilm", "fp32", "wasm", "4", "4", "0", "passed on 4 of 4 devices"],
        ["minilm", "fp32", "webgpu", "4", "0", "4", "failed on 4 of 4 devices"],
    ], chrome
    assert re.fullmatch(r"cosine 0\.4\d*", chrome[1][7]), chrome[1]
    assert chrome[0][7] == "-" and chrome[1][8] == "-", chrome
    assert 30 <= float(chrome[0][8]) <= 33, chrome[0]
    webkit = class_rows(tab, WEBKIT_KEY)
    assert webkit == [["iris", "fp32", "wasm", "2", "2", "0", "too few devices (2 of k=3)", "-", "-"]], webkit
    firefox = class_rows(tab, FIREFOX_KEY)
    mixed = "mixed: passed on 2, failed on 2 of 4 devices"
    assert firefox[0][:7] == ["minilm", "fp32", "wasm-1t", "4", "2", "2", mixed], firefox

    # The Chrome class's times (4 passing devices >= k) are a chart; the others have none yet (fewer than k passed).
    [chart_id] = [
        s.get_attribute("data-testid")
        for s in tab.page.locator("[data-testid^=fleet-chart-]").all()
        if s.locator("canvas").count()
    ]
    chart = by_testid(tab.page, chart_id)
    warm_title = re.compile(rf"^{re.escape(CHROME_KEY)}: warm run time")
    expect(chart.locator("canvas")).to_have_attribute("aria-label", warm_title)
    assert drawn_pixels(tab, chart_id) > 1000
    expect(tab.page.get_by_text("No time distribution yet", exact=False)).to_have_count(2)
    by_testid(tab.page, f"{chart_id}-time").select_option("create_ms")
    expect(chart.locator("canvas")).to_have_attribute("aria-label", re.compile(r"session creation time"))
    page_text(tab)
    assert tab.console_errors == [], tab.console_errors


def test_a_server_without_reports_says_how_pages_report(fleet_server, open_tab):
    base_url = fleet_server()
    tab = open_fleet(open_tab, base_url)
    expect(by_testid(tab.page, "fleet-empty")).to_have_text(NO_REPORTS)
    expect(by_testid(tab.page, "fleet-summary")).to_have_text(re.compile(r"^0 reports accepted · k = 3 "))
    expect(tab.page.locator("canvas")).to_have_count(0)
    page_text(tab)
    assert tab.console_errors == [], tab.console_errors


def test_a_server_with_reports_off_shows_an_error_box(fleet_server, open_tab):
    base_url = fleet_server(fleet_reports="false")
    with urllib.request.urlopen(f"{base_url}/api/fleet", timeout=30) as answered:
        assert (answered.status, answered.read()) == (204, b"")
    tab = open_fleet(open_tab, base_url)
    box = by_testid(tab.page, "fleet-off").get_by_role("alert")
    expect(box).to_have_text(REPORTS_OFF)
    page_text(tab)
    # No fleet is no error: every page's plan reads api/fleet, and nothing lands in the console.
    assert tab.console_errors == [], tab.console_errors


# --------------------------------------------------------------------------- the charts' choices


def _time(median: float, clients: int = 5) -> dict:
    return {
        "median": median,
        "p10": median * 0.7,
        "p25": median * 0.85,
        "p75": median * 1.2,
        "p90": median * 1.5,
        "clients": clients,
    }


CONTRACT_FLEET = {
    "schema": 1,
    "k": 3,
    "fail_share": 0.667,
    "generated": "2026-12-05T01:00:00Z",
    "reports": 12345,
    "groups": [
        {
            "sha256": "a" * 64,
            "runtime": runtime,
            "model": "minilm",
            "variant": "fp32",
            "form": None,
            "class": CHROME,
            "class_key": CHROME_KEY,
            "clients": 14,
            "pass": 14,
            "fail": 0,
            "verdict": "pass",
            "metric": None,
            "times": {"create_ms": _time(create), "first_run_ms": None, "warm_run_ms": _time(warm)},
        }
        for runtime, warm, create in (("wasm", 2.0, 40.0), ("webgpu", 900.0, 3000.0))
    ],
}


def test_a_wide_range_of_times_is_drawn_on_a_log_axis(live_server, open_tab):
    """A document of the contract's shape served in the server's place: WebGPU on SwiftShader 450x slower than
    WebAssembly is drawn on a log axis, and the select offers the times the groups have (no first run here)."""

    def setup(context):
        context.route(
            "**/api/fleet",
            lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(CONTRACT_FLEET)),
        )

    tab = open_fleet(open_tab, live_server, setup=setup)
    summary = re.compile(r"^12,345 reports accepted · k = 3 .* · 1 device class · 1 model · verdicts: 2 pass$")
    expect(by_testid(tab.page, "fleet-summary")).to_have_text(summary)
    scale = tab.page.evaluate("""() => {
      const chart = globalThis.Chart.getChart(document.querySelector('[data-testid="fleet-chart-0"] canvas'));
      return [chart.scales.y.type, chart.data.labels];
    }""")
    assert scale == ["logarithmic", ["minilm fp32 · wasm", "minilm fp32 · webgpu"]], scale
    assert drawn_pixels(tab, "fleet-chart-0") > 1000
    options = by_testid(tab.page, "fleet-chart-0-time").locator("option")
    expect(options).to_have_text(["warm run", "session creation"])
    page_text(tab)
    assert tab.console_errors == [], tab.console_errors
