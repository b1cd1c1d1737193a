"""The browser app in a real Chromium against a real `onnxport serve`: the models pages, the device
probe, the playground's runs on WebGPU (SwiftShader), WebAssembly and the server fallback, the
artifact cache, the sha256 check of downloads, and the in-browser tokenizer.

Fixtures (tests/fixtures/): `chromium` (no WebGPU adapter), `chromium_webgpu` (SwiftShader),
`open_tab` (a fresh context and page per call), `live_server`, `serve_repository`.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from fixtures.playground import (
    PAGE_TIMEOUT_MS,
    by_testid,
    draw_digit,
    expect_ran_on,
    flip_middle_bytes,
    max_abs_diffs,
    plan_steps,
    plan_variant,
    result_values,
    run,
    seed_threads,
    wait_for_probe,
)
from onnxport.repository.variant_table import NAMES as VARIANT_ORDER

SPECIES = ["setosa", "versicolor", "virginica"]


# --------------------------------------------------------------------------- models pages


def test_models_page_shows_a_card_per_model_without_console_errors(open_tab, demo_manifest):
    tab = open_tab("#/")
    page = tab.page
    wait_for_probe(page)
    cards = page.locator("section[data-model]")
    expect(cards).to_have_count(len(demo_manifest["models"]), timeout=PAGE_TIMEOUT_MS)
    for name, entry in demo_manifest["models"].items():
        card = page.locator(f'section[data-model="{name}"]')
        expect(card).to_be_visible()
        expect(card.get_by_role("link", name=name, exact=True)).to_have_attribute("href", f"#/model/{name}")
        expect(card.locator("tr[data-variant]")).to_have_count(len(entry["variants"]))
        expect(card.get_by_role("link", name="Open in the playground")).to_have_attribute("href", f"#/play/{name}")
    assert tab.console_errors == [], f"console errors on the models page: {tab.console_errors}"


def test_iris_links_lead_to_the_model_page_and_the_playground(open_tab, demo_manifest):
    entry = demo_manifest["models"]["iris"]
    page = open_tab("#/").page
    page.locator('section[data-model="iris"]').get_by_role("link", name="iris", exact=True).click()
    expect(page).to_have_url(re.compile(r"#/model/iris$"))

    operators = page.locator(".operators .op")
    expect(operators).to_have_text(
        [f"{op} ×{count}" for op, count in entry["operators"].items()], timeout=PAGE_TIMEOUT_MS
    )
    variants = page.locator("h3", has_text="Variants").locator("xpath=following-sibling::table[1]")
    rows = variants.locator("tbody tr")
    names = sorted(entry["variants"], key=VARIANT_ORDER.index)
    expect(rows).to_have_count(len(names))
    for row, name in zip(rows.all(), names):
        expect(row.locator("td").first).to_have_text(name)
        expect(row.locator("td").last).to_have_text(re.compile("^" + re.escape(entry["variants"][name]["status"])))

    page.get_by_role("link", name="Open in the playground").click()
    expect(page).to_have_url(re.compile(r"#/play/iris$"))
    expect(page.get_by_role("heading", name="Playground: iris")).to_be_visible()


def test_unknown_model_route_shows_an_error_naming_it(open_tab):
    page = open_tab("#/play/nosuch").page
    error = by_testid(page, "error")
    expect(error).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(error).to_have_attribute("role", "alert")
    expect(error).to_contain_text('"nosuch"')


# --------------------------------------------------------------------------- device probe


@pytest.mark.parametrize(
    ("browser_fixture", "webgpu", "text"),
    [
        ("chromium_webgpu", "true", "software fallback adapter"),  # SwiftShader flags
        ("chromium", "false", "WebGPU: no"),  # no flags, no adapter
    ],
)
def test_probe_reports_webgpu_threads_and_simd(open_tab, request, browser_fixture, webgpu, text):
    page = open_tab("#/", browser=request.getfixturevalue(browser_fixture)).page
    wait_for_probe(page)
    probe = by_testid(page, "probe-webgpu")
    expect(probe).to_have_attribute("data-available", webgpu)
    expect(probe).to_contain_text(text)
    expect(by_testid(page, "probe-threads")).to_have_attribute("data-available", "true")
    expect(by_testid(page, "probe-simd")).to_have_attribute("data-available", "true")
    assert page.evaluate("() => crossOriginIsolated") is True


# --------------------------------------------------------------------------- digits


@pytest.mark.parametrize(
    ("runtime", "variant"),
    [("webgpu", "fp32"), ("wasm", None), ("wasm", "fp32")],
    ids=["webgpu-fp32", "wasm-auto", "wasm-fp32"],
)
def test_drawn_digit_gets_the_same_class_in_the_browser_and_on_the_server(
    open_tab,
    chromium,
    chromium_webgpu,
    runtime,
    variant,
):
    route = f"#/play/digits?runtime={runtime}" + (f"&variant={variant}" if variant else "")
    page = open_tab(route, browser=chromium_webgpu if runtime == "webgpu" else chromium).page
    assert {r for r, _ in plan_steps(page)} == {runtime}, "a pinned runtime leaves only its own steps in the plan"
    expected_variant = variant or plan_variant(page, runtime)
    assert draw_digit(page) > 0, "the mouse strokes left no ink on the canvas"

    expect_ran_on(page, runtime, expected_variant)
    browser_value, server_value = result_values(page)
    assert browser_value in [str(d) for d in range(10)], browser_value
    assert browser_value == server_value, f"browser says {browser_value}, the server {server_value}"
    if variant == "fp32":
        diffs = max_abs_diffs(page)
        assert max(diffs.values()) < 1e-4, f"fp32 {runtime} vs the server's fp32: {diffs}"


def test_without_webgpu_the_plan_starts_on_wasm_and_says_why_webgpu_is_skipped(open_tab):
    page = open_tab("#/play/digits").page
    steps = plan_steps(page)
    assert steps[0][0] == "wasm", steps
    assert steps[-1][0] == "server", steps
    skipped = by_testid(page, "plan").locator('ul.skipped > li[data-runtime="webgpu"]')
    expect(skipped).to_have_count(1)
    expect(skipped).to_have_text(re.compile(r"^webgpu skipped: \S"))
    wasm_variant = plan_variant(page, "wasm")
    draw_digit(page)
    path = expect_ran_on(page, "wasm", wasm_variant)
    assert "failed" not in path.inner_text()


def test_blocked_webassembly_falls_back_to_the_server_and_says_so(open_tab):
    def block_wasm(context):
        context.route("**/ort-wasm-simd-threaded.wasm", lambda route: route.abort())

    tab = open_tab("#/play/digits", setup=block_wasm)
    page = tab.page
    draw_digit(page)
    path = expect_ran_on(page, "server")
    expect(path).to_have_text(re.compile(r"^Ran on server \(\w[\w-]*\) after wasm failed\.$"))
    failure = by_testid(page, "notes").get_by_role("alert")
    expect(failure).to_have_count(1)
    expect(failure).to_be_visible()
    expect(failure).to_contain_text(re.compile(r"^wasm \([\w-]+\) failed: "))
    assert any("ort-wasm-simd-threaded.wasm" in url for url in tab.requests), "the wasm file was never asked for"
    browser_value, server_value = result_values(page)
    assert browser_value == server_value


def test_artifacts_are_downloaded_once_then_served_from_the_cache_until_cleared(open_tab):
    tab = open_tab("#/play/digits?runtime=wasm")
    page = tab.page
    draw_digit(page)
    expect_ran_on(page, "wasm")
    expect(by_testid(page, "browser-result")).to_contain_text("model from network")
    expect(by_testid(page, "download-progress")).to_contain_text("downloading")
    first = tab.artifact_requests()
    assert len(first) == 1, f"one artifact for one run, got {first}"

    page.reload()
    draw_digit(page)
    expect_ran_on(page, "wasm")
    expect(by_testid(page, "browser-result")).to_contain_text("model from cache")
    expect(by_testid(page, "download-progress")).to_contain_text("from cache")
    requests = tab.artifact_requests()
    assert requests == first, f"every artifact URL once over two loads, got {requests}"

    clear = by_testid(page, "clear-cache")
    clear.click()
    expect(clear).to_have_text("Cache cleared")
    page.reload()
    draw_digit(page)
    expect_ran_on(page, "wasm")
    expect(by_testid(page, "browser-result")).to_contain_text("model from network")
    assert tab.artifact_requests() == first * 2, "after clearing the cache the artifact is downloaded again"


# A cache hit is not re-hashed (it was verified when it was stored, under its sha256): its length
# and a sampled sha256 recorded at that time are checked instead. Offset 0 is always sampled.
DAMAGE_CACHED_ARTIFACT = """async (damage) => {
  const cache = await caches.open("onnxport-artifacts-v2");
  let damaged = 0;
  for (const request of await cache.keys()) {
    if (!request.url.endsWith(".onnx")) continue;
    const entry = await cache.match(request);
    const bytes = new Uint8Array(await entry.arrayBuffer());
    const changed = damage === "cut short"
      ? bytes.slice(0, bytes.length - 1)
      : bytes.map((b, i) => (i === 0 ? b ^ 0xff : b));
    await cache.put(request, new Response(changed, { headers: entry.headers }));
    damaged += 1;
  }
  return damaged;
}"""


@pytest.mark.parametrize(
    ("damage", "note"),
    [
        ("cut short", re.compile(r"the cached copy has \d+ bytes, not the manifest's \d+ and was fetched again")),
        ("altered", "the cached copy failed its sampled sha256 check and was fetched again"),
    ],
)
def test_a_damaged_cache_entry_is_refused_and_downloaded_again(open_tab, damage, note):
    tab = open_tab("#/play/digits?runtime=wasm&variant=fp32")
    page = tab.page
    draw_digit(page)
    expect_ran_on(page, "wasm", "fp32")
    first = tab.artifact_requests()
    assert page.evaluate(DAMAGE_CACHED_ARTIFACT, damage) == 1

    page.reload()
    draw_digit(page)
    expect_ran_on(page, "wasm", "fp32")
    expect(by_testid(page, "notes")).to_contain_text(note)
    expect(by_testid(page, "browser-result")).to_contain_text("model from network")
    assert tab.artifact_requests() == first * 2, "the damaged entry must be downloaded again"

    page.reload()  # and the new entry is whole: the third start reads it from the cache
    draw_digit(page)
    expect_ran_on(page, "wasm", "fp32")
    expect(by_testid(page, "browser-result")).to_contain_text("model from cache")


def test_a_full_storage_quota_runs_without_the_cache_and_says_so(open_tab):
    tab = open_tab()
    page = tab.page
    # A real quota, set through the browser's own DevTools protocol: 1 KB for this origin.
    session = page.context.new_cdp_session(page)
    session.send("Storage.overrideQuotaForOrigin", {"origin": tab.base_url, "quotaSize": 1024})
    tab.goto("#/play/digits?runtime=wasm&variant=fp32")
    draw_digit(page)
    expect_ran_on(page, "wasm", "fp32")
    expect(by_testid(page, "notes")).to_contain_text("not cached")
    expect(by_testid(page, "browser-result")).to_contain_text("model from network")


# --------------------------------------------------------------------------- tampered artifacts


def _expect_integrity_alert(page, file: str) -> None:
    alert = page.get_by_role("alert").filter(has_text="refusing")
    expect(alert.first).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    text = alert.first.inner_text()
    assert "sha256" in text and file in text, text


def test_a_tampered_pinned_artifact_is_refused_and_the_run_fails(open_tab, repository_copy, serve_repository):
    repository = repository_copy(models=["digits"])
    manifest = json.loads((repository / "manifest.json").read_text())
    record = manifest["models"]["digits"]["variants"]["fp32"]
    artifact = repository / record["file"]
    original = artifact.read_bytes()
    flip_middle_bytes(artifact)
    base_url = serve_repository(repository)

    tab = open_tab("#/play/digits?runtime=wasm&variant=fp32", base_url=base_url)
    page = tab.page
    assert [r for r, _ in plan_steps(page)] == ["wasm"], "pinned to wasm: no fallback step"
    draw_digit(page)
    path = run(page)
    expect(path).to_have_text("Failed.")
    _expect_integrity_alert(page, record["file"])
    expect(by_testid(page, "notes")).to_contain_text("refusing")
    expect(by_testid(page, "browser-result")).to_have_count(0)

    # The refused bytes were not kept: with the file repaired, the next run downloads it again and runs.
    artifact.write_bytes(original)
    expect_ran_on(page, "wasm", "fp32")
    expect(by_testid(page, "browser-result")).to_contain_text("model from network")
    assert len(tab.artifact_requests()) == 2, tab.artifact_requests()


def test_a_tampered_auto_chosen_artifact_falls_back_to_the_next_step(
    open_tab,
    repository_copy,
    serve_repository,
    replace_manifest,
):
    repository = repository_copy(models=["digits"])
    manifest = json.loads((repository / "manifest.json").read_text())
    variants = manifest["models"]["digits"]["variants"]
    # The server step runs fp32: the plan's wasm choice (the fastest at build time) must be
    # another variant, so fp32 is made the slowest in this copy's manifest.
    slowest = max(v["speed"]["native_ms"] for v in variants.values() if v.get("speed"))
    variants["fp32"]["speed"]["native_ms"] = slowest + 1.0
    replace_manifest(repository, manifest)
    base_url = serve_repository(repository)

    page = open_tab("#/play/digits", base_url=base_url).page
    wasm_variant = plan_variant(page, "wasm")
    assert wasm_variant != "fp32"
    record = variants[wasm_variant]
    flip_middle_bytes(repository / record["file"])
    draw_digit(page)
    # The refused artifact costs that step only: the next variant in the plan runs, on the same runtime.
    path = expect_ran_on(page, "wasm")
    assert path.get_attribute("data-variant") != wasm_variant
    expect(path).to_have_text(re.compile(r"^Ran on wasm \([\w-]+, \d threads?\) after wasm failed\.$"))
    _expect_integrity_alert(page, record["file"])
    expect(by_testid(page, "notes").get_by_role("alert")).to_contain_text(f"wasm ({wasm_variant}) failed")


# --------------------------------------------------------------------------- iris and minilm


def test_iris_virginica_in_the_browser_and_on_the_server(open_tab):
    page = open_tab("#/play/iris").page
    for label, value in [
        ("sepal length", "6.9"),
        ("sepal width", "3.1"),
        ("petal length", "5.4"),
        ("petal width", "2.1"),
    ]:
        page.get_by_label(label, exact=True).fill(value)
    expect_ran_on(page, "wasm")
    browser_value, server_value = result_values(page)
    assert browser_value == server_value == str(SPECIES.index("virginica")), (browser_value, server_value)
    expect(by_testid(page, "browser-result")).to_contain_text("virginica")
    expect(by_testid(page, "server-result")).to_contain_text("virginica")


def _python_tokenized(demo_repository, entry, sentences, folder):
    """The sentences tokenized in Python the way the minilm recipe does, from the published tokenizer files."""
    from transformers import AutoTokenizer

    for name, asset in entry["assets"].items():
        (folder / name).write_bytes((demo_repository / asset["file"]).read_bytes())
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    encoded = tokenizer(sentences, padding=True, truncation=True, max_length=128, return_tensors="np")
    return {
        "input_ids": encoded["input_ids"].astype(np.int64),
        "attention_mask": encoded["attention_mask"].astype(np.int64),
    }


def _cosine(embeddings) -> float:
    a, b = embeddings.astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_minilm_fp32_cosine_in_the_browser_equals_the_servers(
    open_tab,
    demo_repository,
    demo_manifest,
    reference_outputs,
    tmp_path,
):
    tab = open_tab()
    sent = []
    tab.page.on("request", lambda r: sent.append(r.post_data) if "/v2/models/minilm/" in r.url else None)
    page = tab.goto("#/play/minilm?runtime=wasm&variant=fp32")
    sentences = [by_testid(page, "sentence-a").input_value(), by_testid(page, "sentence-b").input_value()]
    assert all(s.strip() for s in sentences), sentences
    expect_ran_on(page, "wasm", "fp32")
    browser_value, server_value = (float(v) for v in result_values(page))
    assert 0.0 < browser_value < 1.0, browser_value
    assert abs(browser_value - server_value) < 1e-4, f"browser cosine {browser_value}, server {server_value}"

    # The server reference ran on the page's token ids: those must be the ones the recipe's own
    # tokenizer gives, and the cosine the one of an independent onnxruntime run on them.
    expected = _python_tokenized(demo_repository, demo_manifest["models"]["minilm"], sentences, tmp_path)
    assert len(sent) == 1, f"expected one inference request to the server, saw {len(sent)}"
    inputs = {i["name"]: np.array(i["data"], dtype=np.int64).reshape(i["shape"]) for i in json.loads(sent[0])["inputs"]}
    for name, value in expected.items():
        np.testing.assert_array_equal(inputs[name], value, err_msg=f"{name} from the browser's tokenizer")
    reference = _cosine(reference_outputs("minilm", "fp32", expected)["sentence_embedding"])
    assert abs(browser_value - reference) < 1e-4, (
        f"browser cosine {browser_value}, onnxruntime on Python tokens {reference}"
    )


def test_a_model_stays_loaded_across_pages_of_the_app(open_tab):
    """Hash navigation keeps the page, its workers and their sessions: coming back to a model runs it
    at once, with no new worker, download, session or verification."""
    tab = open_tab("#/")
    seed_threads(tab.page, 1)  # no thread trial: its worker would come and go while the workers are counted
    page = tab.goto("#/play/digits?runtime=wasm&variant=fp32")
    draw_digit(page)
    expect_ran_on(page, "wasm", "fp32")
    workers, artifacts, references = len(page.workers), tab.artifact_requests(), tab.reference_requests()
    # With the cache emptied and the artifacts unreachable, only the loaded session can run it again.
    page.evaluate("caches.delete('onnxport-artifacts-v2')")
    tab.context.route("**/artifacts/**", lambda route: route.abort())

    page.evaluate("location.hash = '#/performance'")
    expect(page.get_by_role("heading", name="Performance")).to_be_visible()
    page.evaluate("location.hash = '#/play/digits?runtime=wasm&variant=fp32'")
    draw_digit(page)
    expect_ran_on(page, "wasm", "fp32")
    assert len(page.workers) == workers, "a worker was started again"
    assert (tab.artifact_requests(), tab.reference_requests()) == (artifacts, references)
