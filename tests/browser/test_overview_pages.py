"""The app's pages as an overview (issue 44, items 4 and 5): what users read in Chromium, Firefox ESR and WebKitGTK.

Before: the models page was 4,540 px tall for the nine demo models, each tree model five orange "skipped" rows out
of six; `int8` was the precision of every int4 row; a status cell held onnxruntime's whole error; the model page's
tools listed every installed package; an int4 file no smaller than int8-weights went unremarked; the playground's
fields showed float32 noise (13.399999618530273); an empty digits canvas answered "digit 4"; #/about showed the
models page without a word.

One repository for the module, made as a user makes one (`onnxport build`, `onnxport import`), served by a real
`onnxport serve`: two demo recipes (lgbm_cancer: one served variant, five skipped; digits: an int4 file 19% smaller
than int8-weights), an already-int8 model (onnxruntime's quantize_dynamic output, imported as it is), a CNN whose
weights are nearly all in convolutions (its int4 file is hardly smaller than int8-weights), and a model whose fp16
file onnxruntime refuses (a cubic Resize; with no retry allowed its reason is onnxruntime's whole message).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from playwright.sync_api import expect

from fixtures.playground import PAGE_TIMEOUT_MS, by_testid, draw_digit, run, wait_for_probe
from fixtures.servers import start_test_server
from int8_models import quantized_model
from onnxport import cli
from onnxport.convert import fp16
from onnxport.convert.fp16 import refusals as fp16_refusals
from onnxport.harness.process import free_port
from onnxport.project import PROJECT_ROOT

pytestmark = pytest.mark.browser  # the other engines' test starts its browser itself

RECIPES = {"lgbm_cancer": "models-trees/lgbm_cancer.py", "digits": "models/digits.py"}
IMPORTED = ("quantized", "convnet", "cubic")
MODELS = (*RECIPES, *IMPORTED)
# A cell shows a short line; anything longer is a whole reason, which belongs behind a click or a hover.
LONGEST_CELL = 100
# A model's row: its head beside at most six variant rows (digits). The tree model's card was 523 px before.
ROW_MAX_PX = {"lgbm_cancer": 130, "digits": 200}
ONE_LINE_PX = 32  # a table row of one line of text (.85rem, 1280 px wide)
EMPTY_CANVAS = "The canvas is empty: draw a digit on it (or choose an image file), then Run."


# --------------------------------------------------------------------------- the repository


def convnet_model() -> onnx.ModelProto:
    """Two 3x3 convolutions (46,080 weights) and a 64x32 MatMul head (2,048): 4-bit blocks take the head only, so
    the int4 file is within a few percent of int8-weights, which stores the convolutions in int8 as int4 does."""
    r = np.random.default_rng(44)
    weights = {
        "w1": (r.normal(size=(64, 16, 3, 3)) * 0.1).astype(np.float32),
        "w2": (r.normal(size=(64, 64, 3, 3)) * 0.05).astype(np.float32),
        "w3": (r.normal(size=(64, 32)) * 0.2).astype(np.float32),
    }
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
            helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
            helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
            helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
            helper.make_node("GlobalAveragePool", ["r2"], ["pooled"], name="pool"),
            helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten"),
            helper.make_node("MatMul", ["flat", "w3"], ["y"], name="head"),
        ],
        "convnet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def cubic_model() -> onnx.ModelProto:
    """A cubic Resize between convolutions, its scales computed from constants (tests/convert/test_fp16_refusals.py):
    onnxruntime refuses its fp16 file with a message of several clauses."""
    r = np.random.default_rng(32)
    weights = {
        "w1": (r.normal(size=(32, 3, 3, 3)) * 0.2).astype(np.float32),
        "w2": (r.normal(size=(16, 32, 3, 3)) * 0.1).astype(np.float32),
        "percent": np.array([100, 100, 50, 50], np.float32),
        "hundredth": np.array([0.01], np.float32),
    }
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w1"], ["features"], pads=[1, 1, 1, 1], name="conv1"),
            helper.make_node("Mul", ["percent", "hundredth"], ["scales"], name="scales"),
            helper.make_node("Resize", ["features", "", "scales"], ["resized"], mode="cubic", name="resize"),
            helper.make_node("Conv", ["resized", "w2"], ["y"], pads=[1, 1, 1, 1], name="conv2"),
        ],
        "cubic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _onnxport(*args) -> None:
    code = cli.main([str(a) for a in args])
    assert code == 0, f"onnxport {' '.join(map(str, args))} exited {code}; see the captured stderr"


@pytest.fixture(scope="module")
def overview(tmp_path_factory):
    """(base URL, manifest) of a real server on the module's repository (about a minute to make on 2 cores)."""
    root = tmp_path_factory.mktemp("overview")
    repository, recipes = root / "repository", root / "recipes"
    recipes.mkdir()
    for name, path in RECIPES.items():
        shutil.copy(PROJECT_ROOT / path, recipes / f"{name}.py")
    started = time.perf_counter()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        _onnxport("--repository", repository, "build", "--recipes", recipes, "--quiet", "--forms", "none")
        r = np.random.default_rng(8)
        inputs = {
            "quantized": {"x": r.normal(size=(6, 64))},
            "convnet": {"x": r.normal(size=(4, 16, 8, 8))},
            "cubic": {"x": r.normal(size=(1, 3, 16, 16))},
        }
        for name, model in (("quantized", quantized_model()), ("convnet", convnet_model()), ("cubic", cubic_model())):
            onnx.save(model, root / f"{name}.onnx")
            np.savez(root / f"{name}.npz", **{k: v.astype(np.float32) for k, v in inputs[name].items()})
            if name == "cubic":  # no Resize rule, no retry: the fp16 variant is rejected by onnxruntime
                patch.setattr(fp16, "folded_resize_inputs", lambda model: (set(), set()))
                patch.setattr(fp16_refusals, "MAX_TRIES", 0)
            _onnxport(
                "--repository",
                repository,
                "import",
                root / f"{name}.onnx",
                "--name",
                name,
                "--task",
                "generic",
                "--inputs",
                root / f"{name}.npz",
                "--quiet",
                "--forms",
                "none",
            )
    print(f"\nthe overview repository made in {time.perf_counter() - started:.1f} s")
    manifest = json.loads((repository / "manifest.json").read_text())
    port = free_port()
    server = start_test_server(
        ["serve", "--repository", str(repository), "--port", str(port)], port, root / "server.log"
    )
    yield server.base_url, manifest
    server.stop()


def test_the_repository_holds_each_case_the_pages_must_say(overview):
    """The premises, read off the manifest: if a build changes, this says which case the pages no longer meet."""
    _, manifest = overview
    models = manifest["models"]
    assert set(models) == set(MODELS), sorted(models)
    cancer = models["lgbm_cancer"]["variants"]
    assert [n for n, v in cancer.items() if v["status"] == "ok"] == ["fp32"], cancer
    assert sum(v["status"] == "skipped" for v in cancer.values()) == 5
    digits, convnet = models["digits"]["variants"], models["convnet"]["variants"]
    for variants in (digits, convnet):
        assert variants["int4"]["status"] == "ok" and variants["int4"]["precision"] == "int8", variants["int4"]
    assert digits["int4"]["settings"]["weights_4bit"] > 0
    assert digits["int4"]["bytes"] < 0.9 * digits["int8-weights"]["bytes"]
    assert convnet["int4"]["bytes"] > 0.9 * convnet["int8-weights"]["bytes"], (
        convnet["int4"]["bytes"],
        convnet["int8-weights"]["bytes"],
    )
    assert models["quantized"]["variants"]["fp32"]["label"] == "original (int8)"
    refused = models["cubic"]["variants"]["fp16"]
    assert refused["status"] == "rejected" and "[ONNXRuntimeError]" in refused["detail"], refused
    assert "\n" not in refused["reason"] and len(whole_reason(refused)) > 2 * LONGEST_CELL, refused


def whole_reason(variant: dict) -> str:
    """What the page shows on demand (web/app/variant-text.js wholeReason): the one line, then onnxruntime's text."""
    detail = variant.get("detail")
    return f"{variant['reason']}\nonnxruntime said: {detail}" if detail else variant["reason"]


# --------------------------------------------------------------------------- the models page


def open_models_page(open_tab, base_url):
    tab = open_tab("#/", base_url=base_url)
    expect(tab.page.locator("section[data-model]")).to_have_count(len(MODELS), timeout=PAGE_TIMEOUT_MS)
    wait_for_probe(tab.page)
    return tab


def test_the_models_page_is_one_compact_row_per_model_with_the_skipped_folded(overview, open_tab):
    base_url, manifest = overview
    tab = open_models_page(open_tab, base_url)
    page = tab.page
    heights = {name: page.locator(f'section[data-model="{name}"]').bounding_box()["height"] for name in MODELS}
    total = page.evaluate("document.documentElement.scrollHeight")
    print(f"\nmodels page: {total} px for {len(MODELS)} models; rows {heights}")
    for name, limit in ROW_MAX_PX.items():
        assert heights[name] <= limit, f"{name}'s row is {heights[name]} px, more than {limit}: {heights}"
    # Folded: the tree model shows its one served row and a line "5 skipped"; the skipped rows are not visible.
    row = page.locator('section[data-model="lgbm_cancer"]')
    expect(row.locator("tr[data-variant]:visible")).to_have_count(1)
    expect(row.locator('tr[data-variant="fp32"]')).to_be_visible()
    expect(by_testid(row, "skipped-count")).to_have_text("5 skipped")
    assert not row.locator("tr.rejected").count(), "a skipped variant is shown as a rejected one"
    # Opened: one short line per skipped variant, the whole reason one click (or a hover) further.
    by_testid(row, "skipped-count").click()
    skipped = row.locator("tr.skipped")
    expect(skipped).to_have_count(5)
    variants = manifest["models"]["lgbm_cancer"]["variants"]
    for line in skipped.all():
        name = line.get_attribute("data-variant")
        text = " ".join(line.inner_text().split())
        assert variants[name]["status"] == "skipped", name
        assert len(text) <= LONGEST_CELL, f"{name}: {text!r}"
        assert line.bounding_box()["height"] <= ONE_LINE_PX, f"{name}'s line wraps: {text!r}"
        reason = variants[name]["reason"]
        if len(reason) > LONGEST_CELL:
            folded = line.locator("details.reason")
            assert folded.get_attribute("title") == reason
            folded.locator("summary").click()
            expect(by_testid(folded, "reason-full")).to_have_text(reason)
    assert tab.console_errors == [], tab.console_errors


def test_the_precision_is_what_each_file_stores(overview, open_tab):
    """int4 where the file holds 4-bit blocks (not the int8 of its budget), int8 for the already-int8 original,
    and no precision for a variant that has no file."""
    base_url, manifest = overview
    page = open_models_page(open_tab, base_url).page
    cells = {
        (name, variant): page.locator(f'section[data-model="{name}"] tr[data-variant="{variant}"] td')
        for name, variant in [
            ("digits", "int4"),
            ("convnet", "int4"),
            ("digits", "int8-weights"),
            ("quantized", "fp32"),
            ("digits", "fp16"),
        ]
    }
    words = {key: locator.all_inner_texts()[:2] for key, locator in cells.items()}
    # convnet's one MatMul may fail 4 bits' budget and stay in 8-bit blocks: its file then stores int8.
    convnet = "int4" if manifest["models"]["convnet"]["variants"]["int4"]["settings"]["weights_4bit"] else "int8"
    assert words == {
        ("digits", "int4"): ["int4", "int4"],
        ("convnet", "int4"): ["int4", convnet],
        ("digits", "int8-weights"): ["int8-weights", "int8"],
        ("quantized", "fp32"): ["original (int8)", "int8"],
        ("digits", "fp16"): ["fp16", "fp16"],
    }, words
    # The model page: every int4 row says int4 or, with no file, nothing.
    for name in ("digits", "lgbm_cancer"):
        page.goto(f"{base_url}/#/model/{name}")
        row = page.locator('table.variants tr[data-variant="int4"]')
        expect(row).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        expected = "int4" if manifest["models"][name]["variants"]["int4"].get("file") else "-"
        expect(row.locator("td").nth(1)).to_have_text(expected)


def test_no_cell_holds_a_whole_runtime_error_and_the_whole_text_is_on_demand(overview, open_tab):
    base_url, manifest = overview
    reason = whole_reason(manifest["models"]["cubic"]["variants"]["fp16"])
    page = open_models_page(open_tab, base_url).page
    for route, row in (
        ("#/", '[data-model="cubic"] tr[data-variant="fp16"]'),
        ("#/model/cubic", 'table.variants tr[data-variant="fp16"]'),
    ):
        page.goto(f"{base_url}/{route}")
        status = page.locator(f"{row} td:last-child")
        expect(status).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        long = [t for t in page.locator("table.variants td").all_inner_texts() if len(t) > LONGEST_CELL]
        assert not long, f"{route}: cells longer than {LONGEST_CELL} characters: {long}"
        text = page.locator("body").inner_text()
        assert "[ONNXRuntimeError]" not in text, f"{route} shows onnxruntime's raw error: {text}"
        expect(status).to_have_text(
            re.compile(r"^rejected: onnxruntime (\S+ )?(cannot load|failed to run) it$"), use_inner_text=True
        )
        folded = status.locator("details.reason")
        assert folded.get_attribute("title") == reason
        folded.locator("summary").click()
        expect(by_testid(folded, "reason-full")).to_have_text(reason)


def test_a_4_bit_file_no_smaller_than_the_8_bit_one_is_said(overview, open_tab):
    base_url, manifest = overview
    page = open_models_page(open_tab, base_url).page
    convnet = manifest["models"]["convnet"]["variants"]
    note = page.locator('section[data-model="convnet"] [data-testid="int4-note"]')
    expect(note).to_contain_text("4 bits gained nothing meaningful on this model")
    sizes = re.findall(r"\(([\d.]+ KB)\)", note.inner_text())
    assert sizes == [f"{convnet['int4']['bytes'] / 1024:.1f} KB", f"{convnet['int8-weights']['bytes'] / 1024:.1f} KB"]
    expect(page.locator('section[data-model="digits"] [data-testid="int4-note"]')).to_have_count(0)
    said = note.inner_text()
    page.goto(f"{base_url}/#/model/convnet")
    expect(by_testid(page, "int4-note")).to_have_text(said, timeout=PAGE_TIMEOUT_MS)
    page.goto(f"{base_url}/#/model/digits")
    expect(page.get_by_role("heading", name="Variants")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(by_testid(page, "int4-note")).to_have_count(0)


def test_the_model_page_names_the_tools_that_made_the_model(overview, open_tab):
    """The manifest records what each build used (convert/intake/tools.py): LightGBM's converter for the tree model,
    torch for digits, neither for an imported file."""
    base_url, manifest = overview
    page = open_tab(base_url=base_url).page
    wanted = {
        "lgbm_cancer": ({"lightgbm", "onnxmltools"}, {"torch", "xgboost-cpu", "transformers"}),
        "digits": ({"torch"}, {"lightgbm", "xgboost-cpu", "onnxmltools", "transformers"}),
        "convnet": ({"onnx", "onnxruntime"}, {"torch", "lightgbm", "xgboost-cpu", "scikit-learn"}),
    }
    for name, (used, unused) in wanted.items():
        tools = manifest["models"][name]["provenance"]["tools"]
        assert used <= set(tools) and not unused & set(tools), (name, tools)
        page.goto(f"{base_url}/#/model/{name}")
        row = page.locator("table.facts tr").filter(has=page.locator("td", has_text=re.compile("^tools$")))
        expect(row).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        shown = row.locator("td").nth(1).inner_text()
        assert shown == ", ".join(f"{k} {v}" for k, v in tools.items()), shown


# --------------------------------------------------------------------------- the playground


def test_the_playground_fields_show_each_float32_at_its_shortest(overview, open_tab):
    base_url, _ = overview
    import base64
    import urllib.request

    golden = json.loads(urllib.request.urlopen(f"{base_url}/api/models/lgbm_cancer/golden").read())
    encoded = golden["sets"][0]["inputs"]["features"]
    row = np.frombuffer(base64.b64decode(encoded["data"]), dtype=encoded["dtype"])[:30]
    page = open_tab("#/play/lgbm_cancer", base_url=base_url).page
    fields = page.locator('div.source[data-source="widget"] input[type=number]')
    expect(fields).to_have_count(30, timeout=PAGE_TIMEOUT_MS)
    shown = [field.input_value() for field in fields.all()]
    expected = [np.format_float_positional(np.float32(v), unique=True, trim="-") for v in row]
    print(f"\nthe first fields: {shown[:4]} (float64 of the float32s: {[float(v) for v in row[:4]]})")
    assert shown == expected, list(zip(shown, expected))
    assert [np.float32(float(s)) for s in shown] == list(row), "a rounded field is no longer the golden value"
    assert any(len(str(float(v))) > 12 for v in row), "no golden value has float32 noise: the test proves nothing"
    path = run(page)
    assert path.inner_text().startswith("Ran on "), path.inner_text()


def test_an_empty_digits_canvas_asks_for_a_drawing_instead_of_running(overview, open_tab):
    base_url, _ = overview
    tab = open_tab("#/play/digits", base_url=base_url)
    page = tab.page
    expect(by_testid(page, "plan-summary")).to_be_attached(timeout=PAGE_TIMEOUT_MS)
    path = run(page)
    expect(path).to_have_text("Failed.")
    alerts = page.locator("#main [role=alert]")
    expect(alerts).to_have_count(1)
    expect(alerts).to_have_text(EMPTY_CANVAS)
    expect(by_testid(page, "browser-result")).to_have_count(0)
    assert not tab.artifact_requests(), f"an empty canvas still loaded a model: {tab.artifact_requests()}"
    # Cleared after a drawing, it is empty again; drawn on, it runs.
    draw_digit(page)
    by_testid(page, "clear-canvas").click()
    expect(run(page)).to_have_text("Failed.")
    draw_digit(page)
    assert run(page).inner_text().startswith("Ran on ")
    assert tab.console_errors == [], tab.console_errors


# --------------------------------------------------------------------------- routes


@pytest.mark.parametrize("route", ["#/about", "#/bogus", "#/models-page/iris"])
def test_an_unknown_route_says_so_and_links_to_the_models_page(route, overview, open_tab):
    base_url, _ = overview
    tab = open_tab(route, base_url=base_url)
    page = tab.page
    said = by_testid(page, "unknown-route")
    expect(said).to_contain_text(f"no page {route}", timeout=PAGE_TIMEOUT_MS)
    expect(page.locator("section[data-model]")).to_have_count(0)
    page.get_by_role("link", name="Go to the models page").click()
    expect(page.locator("section[data-model]")).to_have_count(len(MODELS), timeout=PAGE_TIMEOUT_MS)
    assert tab.console_errors == [], tab.console_errors


def test_a_model_route_without_a_model_names_the_models(overview, open_tab):
    base_url, _ = overview
    page = open_tab("#/play", base_url=base_url).page
    expect(by_testid(page, "error")).to_have_text(
        re.compile(r"^#/play needs a model: #/play/<model>; models: "), timeout=PAGE_TIMEOUT_MS
    )


# --------------------------------------------------------------------------- the other engines

# The models page read in the page itself once it has rendered: its height, each row's, the folds' words, the longest
# cell; then the words of an unknown route.
READ_MODELS_PAGE = """async (count) => {
  const deadline = Date.now() + 60000;
  while (document.querySelectorAll('section[data-model]').length < count) {
    const shown = document.querySelectorAll('section[data-model]').length;
    if (Date.now() > deadline) throw new Error(`the models page showed ${shown} of ${count} models`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const rows = Object.fromEntries([...document.querySelectorAll('section[data-model]')]
    .map((s) => [s.dataset.model, Math.round(s.getBoundingClientRect().height)]));
  const folds = Object.fromEntries([...document.querySelectorAll('section[data-model]')]
    .map((s) => [s.dataset.model, s.querySelector('[data-testid=skipped-count]')?.textContent ?? null]));
  const cells = [...document.querySelectorAll('table.variants td')].map((td) => td.innerText.trim().length);
  const precision = document.querySelector('[data-model="digits"] tr[data-variant="int4"] td:nth-child(2)').innerText;
  location.hash = '#/bogus';
  while (!document.querySelector('[data-testid=unknown-route]')) {
    if (Date.now() > deadline) throw new Error('#/bogus said nothing');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { height: document.documentElement.scrollHeight, rows, folds, longestCell: Math.max(...cells), precision,
           unknown: document.querySelector('[data-testid=unknown-route]').textContent };
}"""


@pytest.mark.parametrize("engine", ["firefox", "webkit"])
def test_the_models_page_reads_the_same_in_the_other_engines(engine, overview):
    from onnxport.harness import browser_engines

    if engine not in browser_engines.installed():
        pytest.skip(f"{engine} is not installed here")
    base_url, _ = overview

    def read_page():
        with browser_engines.open_browser(engine, webgpu=False) as browser:
            page = browser.new_page()
            page.goto(f"{base_url}/#/")
            return browser.version, page.evaluate(READ_MODELS_PAGE, len(MODELS), timeout_s=120)

    # On a thread of its own: Playwright's sync API cannot start inside the suite's session Playwright on this one.
    with ThreadPoolExecutor(1) as thread:
        version, read = thread.submit(read_page).result(300)
    print(f"\n{engine} {version}: {read}")
    assert read["folds"]["lgbm_cancer"] == "5 skipped", read
    assert read["precision"] == "int4", read
    assert read["longestCell"] <= LONGEST_CELL, read
    for name, limit in ROW_MAX_PX.items():
        assert read["rows"][name] <= limit, read
    assert "no page #/bogus" in read["unknown"], read
