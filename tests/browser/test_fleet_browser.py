"""Fleet verdicts in a real Chromium against a real `onnxport serve` (docs/reference/fleet.md): a simulated fleet of
1,000+ devices in 12 classes reports over HTTP, 30% of them lying, and a new device of a seen class then loads a model
without a local benchmark and without the runtime its class fails; two profiles, the second planning with the
first one's reported times; and what a report holds, read off the request bodies.

The runtime the class fails is made wrong in this browser too, with the library's test-only switch
(`testing.perturb`: WebAssembly on one thread negates every output), so the fleet's verdict is the truth here.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from fixtures.fleet import simulate_fleet
from onnxport.harness.process import free_port

MODEL = "digits"
REPORT_PATH = "/api/fleet/reports"
CLASS_FIELDS = {"engine", "engine_major", "adapter_vendor", "adapter_architecture", "software_adapter", "cores"}
RESULT_FIELDS = {
    "model",
    "variant",
    "form",
    "sha256",
    "runtime",
    "threads",
    "verdict",
    "metric",
    "create_ms",
    "first_run_ms",
    "warm_run_ms",
}

# One load in a page of the server: plan, load, then the first result on the model's golden inputs, timed from the
# load's start (the golden set is read before it). Returns what the plan and the choice said.
LOAD = """async ({ model, report, perturb }) => {
  const { connect } = await import('/web/lib/index.js');
  const client = connect('/', { report, testing: perturb ? { perturb } : {} });
  const [golden] = await client.golden(model);
  const started = performance.now();
  const plan = await client.plan(model);
  const loaded = await client.load(model);
  await loaded.run(golden.inputs);
  const firstResultMs = performance.now() - started;
  const reportStatus = await client.lastReport;
  const c = loaded.choice;
  const step = (s) => ({ runtime: s.runtime, key: s.key, variant: s.variant, form: s.form, why: s.why,
                         runMs: s.runMs ?? null });
  const result = {
    plan: { steps: plan.steps.map(step), skipped: plan.skipped },
    choice: { runtime: c.runtime, key: c.key, variant: c.variant, why: c.why, threads: c.threads,
              verification: c.verification.status, attempts: c.attempts },
    trial: loaded.threadTrial !== null, firstResultMs, reportStatus,
  };
  await loaded.dispose();
  return result;
}"""

DEVICE_CLASS = """async () => {
  const { deviceClass, probe } = await import('/web/lib/index.js');
  return deviceClass(await probe());
}"""


def _server(spawn_server, repository, tmp_path, **settings) -> str:
    port = free_port()
    env = {"ONNXPORT_FLEET_DB": str(tmp_path / f"fleet-{port}.sqlite3")}
    env.update({f"ONNXPORT_{name.upper()}": str(value) for name, value in settings.items()})
    return spawn_server(["serve", "--repository", str(repository), "--port", str(port)], port, env=env)


def _tab(open_tab, base_url, bodies: list | None = None):
    """A fresh context (its own profile: storage, cache) on the app's page, its requests with a body kept."""

    def record(context):
        if bodies is not None:
            context.on(
                "request",
                lambda r: (
                    bodies.append((r.method, r.url, r.post_data, r.headers))
                    if r.post_data is not None or r.method != "GET"
                    else None
                ),
            )

    return open_tab("#/", base_url=base_url, setup=record)


def _load(open_tab, base_url, *, report=False, perturb="", bodies: list | None = None):
    """LOAD of MODEL in a fresh profile: (what it returned, the tab)."""
    tab = _tab(open_tab, base_url, bodies)
    return tab.page.evaluate(LOAD, {"model": MODEL, "report": report, "perturb": perturb}), tab


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def test_a_new_device_of_a_seen_class_skips_the_failing_runtime_and_plans_on_the_fleets_times(
    open_tab, spawn_server, demo_repository, demo_manifest, tmp_path
):
    variants = demo_manifest["models"][MODEL]["variants"]
    files = [
        (key, record["sha256"], MODEL, name)
        for name, record in variants.items()
        if record["status"] == "ok"
        for key in ("wasm", "wasm-1t")
    ]
    # Each file its own speed, 1.5x apart: the plan weighs 1000 warm runs, so among equally fast files the fleet's
    # sampling noise would pick, with liars or without.
    served = sorted(name for name, record in variants.items() if record["status"] == "ok")
    file_speed = {variants[name]["sha256"]: 1.5 ** served.index(name) for name in served}
    runs = {}
    for fleet_name, liars in (("honest", 0.0), ("30% liars", 0.3)):
        # 2,000 reports come from this one address: its rate limit (a setting) is raised for the simulation.
        base_url = _server(spawn_server, demo_repository, tmp_path, fleet_address_rate=100_000)
        browser_class = _tab(open_tab, base_url).page.evaluate(DEVICE_CLASS)
        if fleet_name == "honest":  # before any report: the same device's load without a fleet
            runs["no fleet"], _ = _load(open_tab, base_url, perturb="wasm-1t:negate")
        summary = simulate_fleet(
            base_url,
            browser_class,
            files,
            wrong_runtimes={"wasm-1t"},
            liars=liars,
            devices=1000,
            classes=12,
            seed=len(runs),
            file_speed=file_speed,
        )
        fleet = _get(f"{base_url}/api/fleet")
        assert summary.devices >= 1000 and len({g["class_key"] for g in fleet["groups"]}) >= 10
        failed = [g for g in fleet["groups"] if g["class"] == browser_class and g["runtime"] == "wasm-1t"]
        assert len(failed) == len(files) // 2 and all(g["verdict"] == "fail" for g in failed), failed
        bodies: list = []
        runs[fleet_name], tab = _load(open_tab, base_url, perturb="wasm-1t:negate", bodies=bodies)
        downloads = [url for url in tab.requests if "/repository/artifacts/" in url and url.endswith(".onnx")]
        run = runs[fleet_name]
        # The class's failing runtime: out of the plan before any download, with the fleet's count.
        assert not any(s["key"] == "wasm-1t" for s in run["plan"]["steps"]), run["plan"]["steps"]
        assert run["choice"]["key"] == "wasm" and run["choice"]["threads"] == 2, run["choice"]
        assert run["choice"]["attempts"] == [] and len(downloads) == 1, (run["choice"]["attempts"], downloads)
        assert "2 threads: on one thread, failed verification on" in run["choice"]["why"], run["choice"]["why"]
        # Ranked on the fleet's times, without a local benchmark (no thread trial); verified here all the same.
        assert "the fleet: median of" in run["plan"]["steps"][0]["why"], run["plan"]["steps"][0]
        assert run["trial"] is False
        assert run["choice"]["verification"] == "passed"
        assert not [b for b in bodies if b[0] != "GET"], "reports are off by default"
        print(
            f"\n{fleet_name}: {run['choice']['variant']} on {run['choice']['key']}, first result in "
            f"{run['firstResultMs']:.0f} ms: {run['choice']['why']}"
        )
    # The fastest file by the honest reports, liars or not (their 0.01 ms runs are not in the medians).
    assert {(runs[name]["choice"]["variant"], runs[name]["choice"]["key"]) for name in ("honest", "30% liars")} == {
        (served[0], "wasm")
    }, {name: runs[name]["choice"]["why"] for name in ("honest", "30% liars")}
    before = runs["no fleet"]
    # Without the fleet the page's 2 threads come first (the prior), and the wrong one thread is met by the trial.
    assert (before["choice"]["key"], before["choice"]["threads"], before["trial"]) == ("wasm", 2, True), before
    assert all(a["wrong"] for a in before["choice"]["attempts"]), before["choice"]["attempts"]
    after = {name: f"{runs[name]['firstResultMs']:.0f} ms" for name in ("honest", "30% liars")}
    print(
        f"no fleet: {before['choice']['variant']} on {before['choice']['key']} after "
        f"{len(before['choice']['attempts'])} wrong steps, first result in {before['firstResultMs']:.0f} ms "
        f"(with the fleet: {after})"
    )


def test_a_second_profile_plans_with_the_first_profiles_reported_times(
    open_tab, spawn_server, demo_repository, tmp_path
):
    base_url = _server(spawn_server, demo_repository, tmp_path, fleet_min_clients=1)
    first_bodies: list = []
    first, _ = _load(open_tab, base_url, report=True, bodies=first_bodies)
    assert first["reportStatus"] == 202, first["reportStatus"]
    [(method, url, body, headers)] = first_bodies
    report = json.loads(body)
    [result] = report["results"]
    chosen = (first["choice"]["variant"], first["choice"]["key"])
    assert (result["variant"], result["runtime"], result["verdict"]) == (*chosen, "pass"), (result, chosen)
    second_bodies: list = []
    second, _ = _load(open_tab, base_url, bodies=second_bodies)
    step = next(s for s in second["plan"]["steps"] if (s["variant"], s["key"]) == chosen)
    assert "the fleet: median of 1 device of this class" in step["why"], step["why"]
    assert step["runMs"] == pytest.approx(result["warm_run_ms"]), (step, result)
    assert second_bodies == [], "the second profile has reports off: it sends nothing"


def test_a_report_holds_the_listed_fields_and_nothing_else(open_tab, spawn_server, demo_repository, tmp_path):
    base_url = _server(spawn_server, demo_repository, tmp_path)
    bodies: list = []
    run, _ = _load(open_tab, base_url, report=True, bodies=bodies)
    assert run["reportStatus"] == 202
    assert [(m, u.removeprefix(base_url)) for m, u, _, _ in bodies] == [("POST", REPORT_PATH)], bodies
    _, _, body, headers = bodies[0]
    report = json.loads(body)
    assert set(report) == {"schema", "client", "device", "results"}
    assert set(report["device"]) == CLASS_FIELDS, report["device"]
    for result in report["results"]:
        assert set(result) == RESULT_FIELDS, result
        assert set(result["metric"]) == {"name", "value", "limit"}
    assert len(report["client"]) == 22 and report["client"].replace("-", "").replace("_", "").isalnum()
    # What the browser adds to every request: no referrer (empty) and no cookie (credentials omitted).
    assert not headers.get("referer") and "cookie" not in headers, headers
    # No input or output value travels: the golden inputs' numbers do not appear in the body.
    assert len(body) < 2048, len(body)
