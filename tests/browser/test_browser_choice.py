"""The browser library's choice of runtime, in a real Chromium against a real `onnxport serve`:
measured ranking on a software WebGPU adapter, first-use verification that catches a runtime
giving wrong answers (and remembers it), verdicts of `onnxport check` in the repository, WebNN
in the probe, the example page, and the playground on an imported model's own inputs.

The wrong runtime is made with the library's test-only switch (`?perturb=RUNTIME`, refused
outside automated browsers); test_browser_wrong_results.py has a real model WebGPU gets wrong.
"""

from __future__ import annotations

import contextlib
import json
import re
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from fixtures.browser import launch_chromium
from fixtures.example_page import assert_matches_server, example_run
from fixtures.playground import (
    PAGE_TIMEOUT_MS,
    RUN_TIMEOUT_MS,
    by_testid,
    draw_digit,
    expect_ran_on,
    plan_steps,
    seed_threads,
    wait_for_probe,
)
from onnxport.accuracy import browser_tolerances

SPEEDS_KEY = "onnxport-speeds-v2"
SOFTWARE_RANKED_LATER = "software WebGPU adapter: ranked after WebAssembly until measured faster"


def _steps_of(page, runtime):
    return [text for r, text in plan_steps(page) if r == runtime]


def _variants_of(page, runtime):
    """The variants the plan gives `runtime`, in its order (once the plan is on the page)."""
    plan_steps(page)
    steps = by_testid(page, "plan").locator(f'ol > li[data-runtime="{runtime}"]')
    return [li.get_attribute("data-variant") for li in steps.all()]


@contextlib.contextmanager
def _chromium_with(playwright, flag):
    browser = launch_chromium(playwright, webgpu=False, extra_flags=(flag,))
    try:
        yield browser
    finally:
        browser.close()


def _prepare_input(page, model):
    if model == "digits":
        assert draw_digit(page) > 0


@pytest.mark.parametrize("model", ["digits", "minilm"])
def test_on_a_software_adapter_the_automatic_choice_is_wasm_and_the_page_says_why(open_tab, chromium_webgpu, model):
    page = open_tab(f"#/play/{model}", browser=chromium_webgpu).page
    wait_for_probe(page)
    expect(by_testid(page, "probe-webgpu")).to_contain_text("software fallback adapter")
    steps = plan_steps(page)
    assert steps[0][0] == "wasm", steps
    webgpu = _steps_of(page, "webgpu")
    assert webgpu, f"WebGPU is available, so it is in the plan: {steps}"
    assert all(SOFTWARE_RANKED_LATER in text for text in webgpu), webgpu
    runtimes = [r for r, _ in steps]
    assert max(i for i, r in enumerate(runtimes) if r == "wasm") < runtimes.index("webgpu"), runtimes
    _prepare_input(page, model)
    expect_ran_on(page, "wasm")
    expect(by_testid(page, "choice-verification")).to_contain_text("verified on first use")


MEASURE_EVERY_PAIR = (
    """async ([model, pairs]) => {
  const { connect } = await import('/web/lib/index.js');
  const client = connect();
  const entry = await client.model(model);
  const warm = {};
  for (const [runtime, variant] of pairs) {
    const loaded = await client.load(model, { runtime, variant });
    const reference = await client.reference(entry.variants[variant]);
    const samples = [];
    for (let i = 0; i < 3; i++) samples.push((await loaded.run(reference.inputs)).runMs);
    warm[`${runtime}/${variant}`] = samples;
    await loaded.dispose();
  }
  const plan = await client.plan(model);
  const auto = await client.load(model);
  const choice = { runtime: auto.choice.runtime, variant: auto.choice.variant, why: auto.choice.why };
  await auto.dispose();
  return { warm, first: plan.steps[0], choice, stored: JSON.parse(localStorage.getItem('"""
    + SPEEDS_KEY
    + """')) };
}"""
)


# digits only: minilm's pairs on SwiftShader's WebGPU took 76 s of make test for the same rule (its choice on
# measured speeds is the node tests' and test_browser_forms.py's).
@pytest.mark.parametrize("model", ["digits"])
def test_after_measuring_every_pair_the_choice_is_the_measured_fastest(open_tab, chromium_webgpu, demo_manifest, model):
    entry = demo_manifest["models"][model]
    served = [v for v, r in entry["variants"].items() if r["status"] == "ok"]
    # SwiftShader has no shader-f16: the plan never offers fp16 on WebGPU here.
    pairs = [["wasm", v] for v in served]
    pairs += [["webgpu", v] for v in served if entry["variants"][v]["precision"] != "fp16"]
    page = open_tab("#/", browser=chromium_webgpu).page
    wait_for_probe(page)
    seed_threads(page)  # wasm on the page's threads, as measured: no thread trial runs beside the timed runs
    result = page.evaluate(MEASURE_EVERY_PAIR, [model, pairs])

    # The plan ranks by what this browser measured: the expected time of every pair is now a measurement.
    runtime_key = {"wasm": "wasm", "webgpu": "webgpu"}
    measured = {
        f"{r}/{v}": result["stored"][f"{entry['variants'][v]['sha256']}|{runtime_key[r]}"]["warm_ms"] for r, v in pairs
    }
    fastest = min(measured, key=measured.get)
    chosen = f"{result['choice']['runtime']}/{result['choice']['variant']}"
    assert f"{result['first']['runtime']}/{result['first']['variant']}" == chosen
    assert "measured in this browser" in result["choice"]["why"], result["choice"]
    assert measured[chosen] <= 1.1 * measured[fastest], (
        f"{model}: automatic {chosen} {measured[chosen]:.3f} ms vs fastest pinned {fastest} "
        f"{measured[fastest]:.3f} ms; all: {measured}"
    )
    print(
        f"\n[choice] {model}: automatic {chosen} {measured[chosen]:.3f} ms, fastest pinned {fastest} "
        f"{measured[fastest]:.3f} ms, ratio {measured[chosen] / measured[fastest]:.3f}; "
        + ", ".join(f"{k} {v:.3f}" for k, v in sorted(measured.items(), key=lambda kv: kv[1]))
    )


def test_a_runtime_giving_wrong_answers_is_caught_at_first_use_and_never_run_again(open_tab, demo_manifest):
    served = [v for v, r in demo_manifest["models"]["digits"]["variants"].items() if r["status"] == "ok"]
    # negate: wrong by every rule (fp32's floor and the int8 and fp16 budgets alike); a nudge of one
    # element is within an int8 variant's budget, as int8 rounding differences between builds are.
    tab = open_tab("?perturb=wasm:negate#/play/digits")
    page = tab.page
    assert set(_variants_of(page, "wasm")) == set(served)
    draw_digit(page)
    path = expect_ran_on(page, "server")
    expect(path).to_have_text("Ran on server (fp32) after wasm gave wrong results.")
    alerts = by_testid(page, "notes").get_by_role("alert")
    expect(alerts).to_have_count(len(served))
    for text in alerts.all_inner_texts():
        assert re.search(
            r"^wasm \([\w-]+\) failed: wasm gave wrong results for this model on this device "
            r"\((max error [\d.e+-]+ at \w+\[[\d, ]*\]"  # fp32: element-wise, by the floor
            r"|top-1 agreement with fp32 [\d.]+ < budget [\d.]+)",
            text,
        ), text  # int8, fp16: budget
    attempts = by_testid(page, "choice-attempts").locator("li")
    expect(attempts).to_have_count(len(served))
    assert all(a.get_attribute("data-wrong") == "true" for a in attempts.all())
    expect(attempts.first).to_contain_text("; using server")
    # Verification read each variant's reference file: a run without it would have answered on wasm.
    assert len(tab.reference_requests()) == len(served), tab.reference_requests()
    downloaded = tab.artifact_requests()
    assert len(downloaded) == len(set(downloaded)) == len(served), downloaded

    page.reload()
    assert _steps_of(page, "wasm") == [], "a runtime verification rejected is not in the plan again"
    skipped = by_testid(page, "plan").locator('ul.skipped > li[data-runtime="wasm"]')
    expect(skipped).to_have_count(len(served))
    for text in skipped.all_text_contents():  # the plan is folded under Run: read, not seen
        assert "wrong results" in text and "not tried again" in text, text
    draw_digit(page)
    expect_ran_on(page, "server")
    assert tab.artifact_requests() == downloaded, "after the reload no artifact is fetched again"
    assert len(tab.reference_requests()) == len(served), "nor checked again"


def test_with_verification_off_the_wrong_runtime_answers_so_verification_is_what_catches_it(open_tab):
    page = open_tab("?perturb=wasm#/play/digits?runtime=wasm&variant=fp32&verify=off").page
    draw_digit(page)
    expect_ran_on(page, "wasm", "fp32")
    expect(by_testid(page, "choice-verification")).to_have_text("verification off")
    expect(by_testid(page, "difference")).to_contain_text(re.compile(r"= 1\.\d+e\+0"))


def test_verification_always_checks_again_after_a_reload(open_tab):
    tab = open_tab("#/")
    wait_for_probe(tab.page)
    # One thread, as if this device had measured it: a verdict is kept under the key it ran on (wasm-1t), and iris
    # runs near the 1 ms under which threads are not tried, so a slow warm run on a busy machine moved the next
    # load to all threads (wasm), where the verdict was not, and the test failed.
    seed_threads(tab.page, 1)
    tab.goto("#/play/iris?runtime=wasm&variant=fp32&verify=always")
    expect_ran_on(tab.page, "wasm", "fp32")
    tab.page.reload()
    expect_ran_on(tab.page, "wasm", "fp32")
    expect(by_testid(tab.page, "choice-verification")).to_contain_text("verified on first use")
    assert len(tab.reference_requests()) == 2, tab.reference_requests()

    first_use = tab.goto("#/play/iris?runtime=wasm&variant=fp32")
    first_use.reload()
    expect_ran_on(first_use, "wasm", "fp32")
    expect(by_testid(first_use, "choice-verification")).to_contain_text("verified earlier on this device")
    assert len(tab.reference_requests()) == 2, "first-use remembers the verdict"


def test_the_perturbing_switch_is_refused_outside_automated_browsers(playwright_session, live_server):
    # Without the automation flag, navigator.webdriver is false, as in any user's browser.
    with _chromium_with(playwright_session, "--disable-blink-features=AutomationControlled") as browser:
        page = browser.new_page()
        page.goto(f"{live_server}/?perturb=wasm#/play/iris")
        expect(by_testid(page, "error")).to_contain_text("refused outside automated tests", timeout=PAGE_TIMEOUT_MS)
        assert page.evaluate("() => navigator.webdriver") is False


def test_a_verdict_of_onnxport_check_in_the_repository_skips_that_pair(open_tab, repository_copy, serve_repository):
    repository = repository_copy(models=["digits"])
    manifest = json.loads((repository / "manifest.json").read_text())
    tab = open_tab("#/")
    wait_for_probe(tab.page)
    kind = tab.page.evaluate(
        "async () => { const p = await import('/web/lib/choice/probe.js'); return p.deviceKind(await p.probe()); }"
    )
    first = tab.goto("#/play/digits")
    wasm_first = _variants_of(first, "wasm")[0]
    record = manifest["models"]["digits"]["variants"][wasm_first]
    # As `onnxport check` writes them: one verdict per WebAssembly key, all threads and one.
    verdicts = {
        "schema": "onnxport.verdicts",
        "schema_version": 1,
        "verdicts": [
            {
                "model": "digits",
                "variant": wasm_first,
                "runtime": key,
                "sha256": record["sha256"],
                "status": "fail",
                "reason": "output logits at [0, 3]: expected 1.5, got 0.2",
                "max_abs": 1.3,
                "device_kind": kind,
            }
            for key in ("wasm", "wasm-1t")
        ],
    }
    (repository / "conformance.json").write_text(json.dumps(verdicts))
    base_url = serve_repository(repository)

    page = open_tab("#/play/digits", base_url=base_url).page
    assert wasm_first not in _variants_of(page, "wasm")
    skipped = by_testid(page, "plan").locator(f'ul.skipped > li[data-runtime="wasm"][data-variant="{wasm_first}"]')
    expect(skipped).to_contain_text("onnxport check on this kind of device found it wrong: output logits at [0, 3]")
    draw_digit(page)
    path = expect_ran_on(page, "wasm")
    assert path.get_attribute("data-variant") != wasm_first


def test_webnn_is_probed_and_left_out_with_its_reason(playwright_session, live_server):
    with _chromium_with(playwright_session, "--enable-features=WebMachineLearningNeuralNetwork") as browser:
        page = browser.new_page()
        page.goto(f"{live_server}/#/play/iris")
        wait_for_probe(page)
        probe = by_testid(page, "probe-webnn")
        available = probe.get_attribute("data-available")
        if available == "true":  # a browser with a working WebNN: it must be in the plan
            assert _steps_of(page, "webnn"), plan_steps(page)
            return
        reason = probe.inner_text().removeprefix("WebNN: no (").removesuffix(")")
        assert reason, probe.inner_text()
        skipped = by_testid(page, "plan").locator('ul.skipped > li[data-runtime="webnn"]')
        expect(skipped).to_have_text(f"webnn skipped: {reason}")


def test_the_example_page_runs_and_matches_the_server(open_tab, live_server, v2_codec, golden_inputs):
    """?model=iris, on iris's first golden row (test_example_page.py: the page on a project of one's own)."""
    page = open_tab().page
    page.goto(f"{live_server}/web/examples/index.html?model=iris")
    run = example_run(page)
    assert run["model"] == "iris"
    np.testing.assert_array_equal(run["inputs"]["features"], golden_inputs("iris")["features"][:1])
    assert_matches_server(run, live_server, v2_codec)
    expect(page.locator("#choice")).to_contain_text(f"Runs on wasm ({run['variant']})")


def test_the_text_example_page_embeds_with_the_pipeline_as_the_server_does(
    open_tab, live_server, v2_codec, demo_repository, demo_manifest
):
    """web/examples/text.html: no import map, no tokenizer code; its cosine equals the one of the server's
    embeddings of the same sentences tokenized by the Python side of the pipeline."""
    from onnxport.pipelines.text import TextPipeline

    page = open_tab().page
    page.goto(f"{live_server}/web/examples/text.html")
    expect(page.locator("body[data-done=true]")).to_have_count(1, timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#status")).to_have_text("Done.")
    assert "importmap" not in page.content()
    variant = page.locator("body").get_attribute("data-variant")
    got = float(page.locator("body").get_attribute("data-cosine"))
    entry = demo_manifest["models"]["minilm"]
    text = entry["pipeline"]["text"]
    pipeline = TextPipeline(text, demo_repository / entry["assets"][text["tokenizer"]]["file"])
    feeds = pipeline.encode([page.locator("#a").input_value(), page.locator("#b").input_value()])
    request = urllib.request.Request(
        f"{live_server}/v2/models/minilm/versions/{variant}/infer",
        headers={"Content-Type": "application/json"},
        data=v2_codec.json_request(feeds),
    )
    with urllib.request.urlopen(request) as response:
        _, expected = v2_codec.parse_response(response.read(), None)
    a, b = expected["sentence_embedding"].astype(np.float64)
    assert abs(got - float(a @ b)) <= 2 * browser_tolerances.lookup(variant, "wasm").abs + 1e-6, (got, float(a @ b))


def test_the_playground_of_an_imported_model_runs_on_its_own_inputs(open_tab, run_cli, serve_repository, tmp_path):
    """An imported test directory brings real inputs: the playground feeds them, not random [1, 1] ones."""
    from onnxport.repository import testdata

    source = Path(__file__).resolve().parents[1] / "data" / "onnx-backend" / "test_Conv2d"
    repository = tmp_path / "imported"
    code, _, err = run_cli("--repository", repository, "import", source, "--name", "conv2d", "--quiet")
    assert code == 0, err
    entry = json.loads((repository / "manifest.json").read_text())["models"]["conv2d"]
    names = [i["name"] for i in entry["inputs"]]
    golden = testdata.read_sets(source, names, [])[0][0]
    base_url = serve_repository(repository)
    page = open_tab("#/play/conv2d?variant=fp32", base_url=base_url).page
    picker = by_testid(page, "golden-set")
    expect(picker.locator("option")).to_have_count(1)
    for name, value in golden.items():
        expect(picker.locator("option").first).to_contain_text(f"{name} [{', '.join(map(str, value.shape))}]")
    sent = []
    page.on("request", lambda r: sent.append(r.post_data) if "/v2/models/conv2d/" in r.url else None)
    expect_ran_on(page, "wasm", "fp32")
    shapes = {i["name"]: i["shape"] for i in json.loads(sent[0])["inputs"]}
    assert shapes == {name: list(value.shape) for name, value in golden.items()}, shapes
    diff = float(by_testid(page, "difference").inner_text().split("= ")[-1])
    assert diff < 1e-4, diff
