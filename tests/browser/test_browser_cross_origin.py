"""A page on another origin imports the browser library from an onnxport server and runs a model
there, cross-origin isolated (COEP require-corp), with WebAssembly threads, from the sources' entry or from the
one-file bundle (web/lib/dist/onnxport.js); a page from an origin the server does not list fails, and says why."""

from __future__ import annotations

import contextlib
import json
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from fixtures.isolated_files import isolated_files
from fixtures.playground import RUN_TIMEOUT_MS
from onnxport import tensor_json
from onnxport.accuracy import browser_tolerances
from onnxport.harness.process import free_port

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>another origin</title>
<body>
<script type="module">
  const SERVER = "%(server)s/";
  try {
    const { connect } = await import(SERVER + "%(module)s");
    const client = connect(SERVER);
    const model = await client.load("minilm");
    const atLoad = { key: model.choice.key, threads: model.choice.threads, cores: navigator.hardwareConcurrency };
    const trial = await model.threadTrial;  // one thread timed against the page's threads, right after the load
    const reference = await client.reference((await client.model("minilm")).variants[model.choice.variant]);
    const { outputs } = await model.run(reference.inputs);
    const { runtime, variant, threads, verification } = model.choice;
    window.result = { runtime, variant, threads, trial, atLoad, verification: verification.status,
                      isolated: crossOriginIsolated, embedding: Array.from(outputs.sentence_embedding.data) };
  } catch (error) {
    window.result = { error: error.message };
  }
  document.body.dataset.done = "true";
</script>
"""


@pytest.fixture
def other_origin(tmp_path):
    """other_origin(server_url) -> the URL of a page on a new origin that runs minilm from that server."""
    with contextlib.ExitStack() as servers:

        def start(server_url: str, port: int, module: str = "web/lib/index.js") -> str:
            folder = tmp_path / f"origin-{port}"
            folder.mkdir()
            (folder / "index.html").write_text(PAGE % {"server": server_url, "module": module}, encoding="utf-8")
            return servers.enter_context(isolated_files(folder, port))

        yield start


def _result(page):
    expect(page.locator("body[data-done=true]")).to_have_count(1, timeout=RUN_TIMEOUT_MS)
    return page.evaluate("() => window.result")


@pytest.mark.parametrize("module", ["web/lib/index.js", "web/lib/dist/onnxport.js"])
def test_a_page_on_an_allowed_origin_runs_minilm_with_threads(
    module, spawn_server, demo_repository, other_origin, open_tab
):
    allowed, refused = free_port(), free_port()
    port = free_port()
    server = spawn_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)],
        port,
        env={"ONNXPORT_CORS_ORIGINS": f"http://127.0.0.1:{allowed}"},
    )

    tab = open_tab()
    tab.page.goto(other_origin(server, allowed, module))
    result = _result(tab.page)
    assert "error" not in result, result["error"]
    assert result["isolated"] is True
    # A first load starts on all the page's threads (2 here on 2 cores), not one; then the trial timed one thread
    # against them, and the model runs the count it kept.
    at_load = result["atLoad"]
    assert (at_load["key"], at_load["threads"]) == ("wasm", min(4, at_load["cores"])), result
    assert at_load["threads"] >= 2, result
    assert result["runtime"] == "wasm" and re.search(r"\b([2-9]) threads took ", result["trial"]["why"]), result
    assert result["threads"] == result["trial"]["threads"], result
    assert result["verification"] == "passed"
    manifest = json.loads((demo_repository / "manifest.json").read_text())
    record = manifest["models"]["minilm"]["variants"][result["variant"]]
    reference = json.loads((demo_repository / record["reference"]["file"]).read_text())
    expected = tensor_json.decode(reference["outputs"])["sentence_embedding"].reshape(-1)
    tolerance = browser_tolerances.lookup(result["variant"], "wasm")
    assert np.abs(np.array(result["embedding"]) - expected).max() <= tolerance.abs
    assert all(url.startswith(server) for url in tab.artifact_requests()) and tab.artifact_requests()

    stranger = open_tab()
    stranger.page.goto(other_origin(server, refused, module))
    failed = _result(stranger.page)
    assert module in failed.get("error", ""), failed
    assert not stranger.artifact_requests()
