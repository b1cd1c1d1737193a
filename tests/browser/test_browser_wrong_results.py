"""A real third-party model that onnxruntime-web's WebGPU backend gets wrong, silently: first-use
verification catches it, the page says so and runs WebAssembly, and a reload never tries it again.

The model is a voice-activity detector with LSTM state shipped in a PyPI/npm package, made into
an ONNX test directory by scripts/testdata/fetch_third_party.py (`make testdata`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fixtures.playground import by_testid, expect_ran_on, plan_steps, seed_threads

THIRD_PARTY = Path(__file__).resolve().parents[1] / "data" / "third-party"


@pytest.fixture
def vad_repository(run_cli, tmp_path) -> tuple[Path, str]:
    folder = THIRD_PARTY / "silero-vad"
    if not (folder / "model.onnx").exists():
        pytest.fail(f"no test directory {folder}: run `make testdata` (scripts/testdata/fetch_third_party.py)")
    repository = tmp_path / "third-party"
    code, _, err = run_cli("--repository", repository, "import", folder, "--name", "vad", "--quiet")
    assert code == 0, err
    return repository, "vad"


def test_webgpu_wrong_on_a_real_model_is_caught_at_first_use_and_skipped_after_reload(
    vad_repository,
    serve_repository,
    open_tab,
    chromium_webgpu,
):
    repository, name = vad_repository
    record = json.loads((repository / "manifest.json").read_text())["models"][name]["variants"]["fp32"]
    base_url = serve_repository(repository)
    tab = open_tab("#/", base_url=base_url, browser=chromium_webgpu)
    page = tab.page
    # As on a laptop whose GPU this browser measured fastest: WebGPU fp32 ranks first.
    page.evaluate(
        """sha => localStorage.setItem('onnxport-speeds-v2',
        JSON.stringify({[`${sha}|webgpu`]: {warm_ms: 0.001, runs: 1}}))""",
        record["sha256"],
    )
    seed_threads(page)  # no thread trial: it would read the reference again after the reload
    tab.goto(f"#/play/{name}?variant=fp32")
    steps = plan_steps(page)
    assert steps[0][0] == "webgpu", steps

    path = expect_ran_on(page, "wasm", "fp32")
    expect(path).to_have_text("Ran on wasm (fp32, 2 threads) after webgpu gave wrong results.")
    attempt = by_testid(page, "choice-attempts").locator('li[data-runtime="webgpu"]')
    expect(attempt).to_have_attribute("data-wrong", "true")
    expect(attempt).to_contain_text("webgpu gave wrong results for this model on this device (max error")
    expect(attempt).to_contain_text("; using wasm")
    browser_value, server_value = (
        float(by_testid(page, t).get_attribute("data-value")) for t in ("browser-result", "server-result")
    )
    assert abs(browser_value - server_value) < 1e-4, (browser_value, server_value)
    downloaded = tab.artifact_requests()
    assert downloaded == [f"{base_url}/repository/{record['file']}"], downloaded

    page.reload()
    assert [r for r, _ in plan_steps(page)][0] == "wasm"
    skipped = by_testid(page, "plan").locator('ul.skipped > li[data-runtime="webgpu"][data-variant="fp32"]')
    expect(skipped).to_contain_text("webgpu gave wrong results for this model on this device")
    expect(skipped).to_contain_text("not tried again")
    expect_ran_on(page, "wasm", "fp32")
    assert tab.artifact_requests() == downloaded, "no artifact is fetched twice"
    assert len(tab.reference_requests()) == 1, "its reference is read once, and not again after the reload"
