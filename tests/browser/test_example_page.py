"""web/examples/index.html and text.html, the pages a user copies, on a project of one's own: the `onnxport init`
template built as written and an ONNX test directory imported beside it (no iris, no minilm). The page runs
`?model=NAME`, by default the first model the manifest serves, on inputs built from its signature, and gives the
server's answer to those inputs. A failure says which models exist; the hint about cors_origins comes only when
the page's origin is not the server's (before: "no model "iris" ... (is this page's origin in the server's
cors_origins?)" on the server's own page).

Fixtures: `own_project` (this module: the repository, served), `open_tab` (tests/fixtures/browser.py), v2_codec.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fixtures.example_page import assert_matches_server, example_run, status_when_done
from fixtures.isolated_files import isolated_files
from fixtures.servers import start_test_server
from onnxport.harness.process import free_port
from onnxport.project import PROJECT_ROOT

BACKEND_TEST = Path(__file__).resolve().parents[1] / "data" / "onnx-backend" / "test_Linear"
EXAMPLES = PROJECT_ROOT / "web" / "examples"


def onnxport(*args: object, cwd: Path) -> None:
    """`onnxport ARGS` as a user runs it; fails the test with its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "onnxport", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"onnxport {' '.join(map(str, args))} exited {done.returncode}: {done.stderr[-2000:]}"


@pytest.fixture(scope="module")
def own_project(tmp_path_factory):
    """(base URL, repository, [model names in manifest order]) of a server on an init project's repository: the
    template built, and an ONNX backend test directory imported as "linear"."""
    root = tmp_path_factory.mktemp("own-project")
    repository = root / "repository"
    started = time.perf_counter()
    onnxport("init", "project", cwd=root)
    onnxport(
        "--repository",
        repository,
        "build",
        "--recipes",
        root / "project" / "models",
        "--quiet",
        "--forms",
        "none",
        cwd=root,
    )
    onnxport(
        "--repository", repository, "import", BACKEND_TEST, "--name", "linear", "--quiet", "--forms", "none", cwd=root
    )
    print(f"\ninit template built and a test directory imported in {time.perf_counter() - started:.1f} s")
    names = list(json.loads((repository / "manifest.json").read_text())["models"])
    assert sorted(names) == ["example", "linear"], names
    port = free_port()
    server = start_test_server(
        ["serve", "--repository", str(repository), "--port", str(port)], port, root / "server.log"
    )
    yield server.base_url, repository, names
    server.stop()


def test_by_default_the_page_runs_the_first_served_model_and_agrees_with_the_server(open_tab, own_project, v2_codec):
    base_url, _, names = own_project
    tab = open_tab(base_url=base_url)
    tab.page.goto(f"{base_url}/web/examples/index.html")
    run = example_run(tab.page)
    assert run["model"] == names[0], (run["model"], names)
    assert tab.page.locator("h1").inner_text() == f"{names[0]}, run in this browser"
    # The template reads a digit: 64 pixels a row.
    assert list(run["inputs"]) == ["features"] and run["inputs"]["features"].shape == (1, 64), run["inputs"]
    assert_matches_server(run, base_url, v2_codec)
    assert "cors_origins" not in tab.page.locator("body").inner_text()
    assert tab.console_errors == [], tab.console_errors


def test_model_in_the_query_runs_that_model_on_its_own_test_data(open_tab, own_project, v2_codec):
    base_url, repository, _ = own_project
    tab = open_tab(base_url=base_url)
    tab.page.goto(f"{base_url}/web/examples/index.html?model=linear")
    run = example_run(tab.page)
    assert run["model"] == "linear"
    entry = json.loads((repository / "manifest.json").read_text())["models"]["linear"]
    assert [(name, list(value.shape)) for name, value in run["inputs"].items()] == [
        (spec["name"], spec["shape"]) for spec in entry["inputs"]
    ], (run["inputs"], entry["inputs"])
    assert any(value.any() for value in run["inputs"].values()), "the test directory's data, not zeros"
    assert_matches_server(run, base_url, v2_codec)


def test_an_edited_input_is_run_and_a_wrong_one_is_named(open_tab, own_project, v2_codec):
    base_url, _, _ = own_project
    tab = open_tab(base_url=base_url)
    page = tab.page
    page.goto(f"{base_url}/web/examples/index.html?model=example")
    example_run(page)
    edited = [0.5, -1.0, 2.0, 0.25] * 16
    page.locator("textarea[name=features]").fill(", ".join(map(str, edited)))
    page.locator("#run").click()
    # (the page's Content-Security-Policy allows no wait_for_function: a locator expectation waits)
    expect(page.locator("body")).to_have_attribute("data-inputs", re.compile(r'"data":\[0\.5,-1,2,0\.25,0\.5,'))
    run = example_run(page)
    assert run["inputs"]["features"].tolist() == [edited]
    assert_matches_server(run, base_url, v2_codec)
    page.locator("textarea[name=features]").fill(", ".join(["1", "2", "x"] + ["4"] * 61))
    page.locator("#run").click()
    expect(page.locator("#status")).to_have_text('Failed: input features: value 3 is "x", not a float32')


def test_an_unknown_model_on_the_same_origin_names_the_models_and_no_cors_setting(open_tab, own_project):
    base_url, _, names = own_project
    tab = open_tab(base_url=base_url)
    tab.page.goto(f"{base_url}/web/examples/index.html?model=iris")
    status = status_when_done(tab.page)
    assert status == f'Failed: no model "iris" on {base_url}/; models: {", ".join(names)}', status


def test_the_text_page_names_the_models_with_a_text_pipeline_and_no_cors_setting(open_tab, own_project):
    base_url, _, names = own_project
    tab = open_tab(base_url=base_url)
    tab.page.goto(f"{base_url}/web/examples/text.html")
    status = status_when_done(tab.page)
    assert status == f"Failed: no model with a text pipeline on {base_url}/; its models: {', '.join(names)}", status
    tab.page.goto(f"{base_url}/web/examples/text.html?model=example")
    status = status_when_done(tab.page)
    assert status == f"Failed: example has no text pipeline; models with one on {base_url}/: none", status


def test_across_origins_the_page_says_which_setting_lets_it_in_and_runs_once_it_is_set(
    open_tab, own_project, spawn_server, tmp_path, v2_codec
):
    """A copy of the page on another origin: refused by a server that does not list it, with the hint naming the
    setting and the origin to add; run by a server started with that origin in --cors-origins."""
    base_url, repository, names = own_project
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    shutil.copy(EXAMPLES / "index.html", folder / "index.html")
    with isolated_files(folder) as elsewhere:
        origin = elsewhere.rstrip("/")
        tab = open_tab(base_url=base_url)
        tab.page.goto(f"{elsewhere}index.html?server={base_url}/")
        status = status_when_done(tab.page)
        assert status.startswith("Failed: "), status
        assert status.endswith(
            f"(a page on {origin} needs that origin in the server's cors_origins: "
            f"onnxport serve --cors-origins {origin})"
        ), status

        port = free_port()
        listed = spawn_server(
            ["serve", "--repository", str(repository), "--port", str(port), "--cors-origins", origin], port
        )
        tab = open_tab(base_url=listed)
        tab.page.goto(f"{elsewhere}index.html?server={listed}/")
        run = example_run(tab.page)
        assert run["model"] == names[0]
        assert_matches_server(run, listed, v2_codec)
