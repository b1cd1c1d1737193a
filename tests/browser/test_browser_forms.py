"""Optimized forms in a real Chromium against a real `onnxport serve` (docs/reference/manifest.md, "forms"):
the ORT-format file runs in onnxruntime-web and matches the server; the plan takes a form only
when the repository's check verified it and its bench measured it faster on this kind of device;
a form that gives wrong answers is followed by its variant as built.
"""

from __future__ import annotations

import itertools
import json
import time

import numpy as np
import pytest
from playwright.sync_api import expect

from fixtures.playground import by_testid, draw_digit, expect_ran_on, plan_steps, wait_for_probe
from onnxport.accuracy import browser_tolerances

LOAD_FORM = """async ([model, variant, form]) => {
  const { connect } = await import('/web/lib/index.js');
  const client = connect();
  const entry = await client.model(model);
  const loaded = await client.load(model, { runtime: 'wasm', variant, form });
  const reference = await client.reference(entry.variants[variant].forms[form]);
  const { outputs } = await loaded.run(reference.inputs);
  const choice = {
    form: loaded.choice.form, variant: loaded.choice.variant, verification: loaded.choice.verification.status,
  };
  const encoded = Object.fromEntries(
    Object.entries(outputs).map(([k, t]) => [k, { dims: t.dims, data: Array.from(t.data, Number) }]));
  await loaded.dispose();
  return { choice, outputs: encoded };
}"""


@pytest.mark.parametrize(
    ("model", "variant", "form"),
    [("minilm", "int8-dynamic", "ort"), ("minilm", "fp32", "fused"), ("digits", "fp32", "basic")],
)
def test_a_pinned_form_runs_verified_and_matches_native_onnxruntime_on_it(
    open_tab, demo_manifest, demo_repository, model, variant, form
):
    import onnxruntime as ort

    from onnxport import tensor_json

    record = demo_manifest["models"][model]["variants"][variant]["forms"][form]
    tab = open_tab("#/")
    got = tab.page.evaluate(LOAD_FORM, [model, variant, form])
    assert got["choice"] == {"form": form, "variant": variant, "verification": "passed"}
    assert [u.rsplit("/", 1)[1] for u in tab.artifact_requests()] == [record["file"].rsplit("/", 1)[1]]

    reference = json.loads((demo_repository / record["reference"]["file"]).read_text())
    inputs = tensor_json.decode(reference["inputs"])
    session = ort.InferenceSession(str(demo_repository / record["file"]), providers=["CPUExecutionProvider"])
    native = dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))
    tol = browser_tolerances.lookup(variant, "wasm")
    for name, value in got["outputs"].items():
        browser = np.asarray(value["data"]).reshape(value["dims"])
        assert np.allclose(browser, native[name], atol=tol.abs, rtol=tol.rel), (
            name,
            np.max(np.abs(browser - native[name])),
        )


# `onnxport bench` and `onnxport check` run WebAssembly on all the page's threads and on one: the plan takes
# either, by the threads measured to pay (web/lib/choice/threads.js; here the bench's equal figures: one thread).
WASM_KEYS = ("wasm", "wasm-1t")


def _bench_for(device: dict, manifest: dict, model: str, fast_form: str) -> dict:
    """A bench of this device kind in which `fast_form` of every variant starts and runs faster than
    the variant as built (the figures are the test's; what the plan does with them is not)."""
    rows = []
    for variant, record in manifest["models"][model]["variants"].items():
        if record["status"] != "ok":
            continue
        for (form, file), runtime in itertools.product([(None, record), *record["forms"].items()], WASM_KEYS):
            fast = form == fast_form
            rows.append(
                {
                    "model": model,
                    "variant": variant,
                    "form": form,
                    "runtime": runtime,
                    "status": "ok",
                    "sha256": file["sha256"],
                    "bytes": file["bytes"],
                    "cached": {"create_ms": 5 if fast else 50, "first_run_ms": 1, "total_ms": 100},
                    "warm": {"median_ms": 0.5 if fast else 2, "p90_ms": 3, "runs": 10},
                }
            )
    return {"schema": "onnxport.bench", "schema_version": 1, "browser": {"device": device, "results": rows}}


def _verdicts(kind: str, manifest: dict, model: str, form: str, status: str) -> dict:
    entries = []
    for variant, record in manifest["models"][model]["variants"].items():
        if record["status"] == "ok":
            entries += [
                {
                    "model": model,
                    "variant": variant,
                    "form": form,
                    "runtime": runtime,
                    "status": status,
                    "sha256": record["forms"][form]["sha256"],
                    "reason": None,
                    "max_abs": 0.0,
                    "device_kind": kind,
                }
                for runtime in WASM_KEYS
            ]
    return {"schema": "onnxport.verdicts", "schema_version": 1, "verdicts": entries}


def _device(tab) -> tuple[dict, str]:
    wait_for_probe(tab.page)
    return tab.page.evaluate("""async () => {
      const p = await import('/web/lib/choice/probe.js');
      const device = await p.probe();
      return [device, p.deviceKind(device)];
    }""")


def test_the_playground_runs_the_form_the_check_verified_and_the_bench_measured_faster(
    open_tab, repository_copy, serve_repository
):
    repository = repository_copy(models=["digits"])
    manifest = json.loads((repository / "manifest.json").read_text())
    device, kind = _device(open_tab("#/"))
    (repository / "bench.json").write_text(json.dumps(_bench_for(device, manifest, "digits", "ort")))
    (repository / "conformance.json").write_text(json.dumps(_verdicts(kind, manifest, "digits", "ort", "pass")))
    tab = open_tab("#/play/digits", base_url=serve_repository(repository))
    page = tab.page
    first = by_testid(page, "plan").locator("ol > li").first
    expect(first).to_have_attribute("data-form", "ort")
    expect(first).to_contain_text("ort form (extended, ort):")
    expect(first).to_contain_text("verified by onnxport check on this kind of device")
    draw_digit(page)
    path = expect_ran_on(page, "wasm")
    expect(path).to_have_attribute("data-form", "ort")
    expect(path).to_contain_text(", ort form")
    variant = path.get_attribute("data-variant")
    assert [u.rsplit("/", 1)[1] for u in tab.artifact_requests()] == [
        manifest["models"]["digits"]["variants"][variant]["forms"]["ort"]["file"].rsplit("/", 1)[1]
    ]


def test_without_a_verdict_the_faster_form_is_not_taken(open_tab, repository_copy, serve_repository):
    repository = repository_copy(models=["digits"])
    manifest = json.loads((repository / "manifest.json").read_text())
    device, kind = _device(open_tab("#/"))
    (repository / "bench.json").write_text(json.dumps(_bench_for(device, manifest, "digits", "ort")))
    (repository / "conformance.json").write_text(json.dumps(_verdicts(kind, manifest, "digits", "ort", "fail")))
    page = open_tab("#/play/digits", base_url=serve_repository(repository)).page
    plan_steps(page)
    forms = {li.get_attribute("data-form") for li in by_testid(page, "plan").locator("ol > li").all()}
    assert forms == {"as built"}, forms


def test_a_form_giving_wrong_answers_is_followed_by_its_variant_as_built(open_tab):
    tab = open_tab("?perturb=wasm#/")
    got = tab.page.evaluate("""async () => {
      const { connect } = await import('/web/lib/index.js');
      const client = connect(undefined, { testing: { perturb: 'wasm' } });
      const loaded = await client.load('iris', { runtime: 'wasm', variant: 'fp32', form: 'basic' })
        .catch((error) => ({ error: error.message, attempts: error.attempts }));
      return loaded.choice ? { runtime: loaded.choice.runtime, attempts: loaded.choice.attempts } : loaded;
    }""")
    attempts = got["attempts"]
    assert [(a["variant"], a["form"], a["wrong"]) for a in attempts] == [
        ("fp32", "basic", True),
        ("fp32", None, True),
    ], attempts
    assert "gave wrong results" in attempts[0]["error"]


def test_the_playground_starts_the_runtime_before_run_is_clicked(open_tab):
    tab = open_tab("#/play/iris")
    plan_steps(tab.page)
    deadline = time.monotonic() + 30
    while not any(u.endswith(".wasm") and "ort-wasm" in u for u in tab.requests) and time.monotonic() < deadline:
        tab.page.wait_for_timeout(100)
    assert any(u.endswith(".wasm") and "ort-wasm" in u for u in tab.requests), "client.prepare fetched no .wasm"
    assert tab.artifact_requests() == [], "prepare starts the runtime, not the model"
    expect_ran_on(tab.page, "wasm")
    assert len(tab.artifact_requests()) == 1
