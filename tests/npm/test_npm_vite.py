"""A web app built with Vite from the npm package: a fresh Vite project installs the `npm pack` tarball
of web/lib, imports `onnxport-web`, and `vite build` bundles it. The built page, served from its own
origin and cross-origin isolated, runs minilm from an onnxport server on another origin on WebAssembly
with threads, and its embedding is the server's V2 answer within the runtime's tolerance. The bundle holds
no onnxruntime-web and no .wasm: those come from the server."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from npm_pack import PROJECT_ROOT, pack
from playwright.sync_api import expect

from fixtures.isolated_files import isolated_files
from fixtures.playground import RUN_TIMEOUT_MS
from onnxport import tensor_json
from onnxport.accuracy import browser_tolerances
from onnxport.harness.process import free_port

# The checkout pins vite (package.json's devDependencies, locked): `make setup`'s npm ci leaves it in
# npm's cache, so the fresh project's install needs no network.
VITE_VERSION = json.loads((PROJECT_ROOT / "package.json").read_text())["devDependencies"]["vite"]
# What a bundle of the library weighs (42 kB: its modules and its worker); onnxruntime-web's
# JavaScript alone is over 400 kB, its .wasm files over 10 MB.
MAX_BUNDLE_BYTES = 200_000

INDEX_HTML = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>a Vite app</title></head>
<body><script type="module" src="/main.js"></script></body>
</html>
"""

# The package README's example, with the reference inputs the server publishes for the loaded variant.
MAIN_JS = """import { connect } from "onnxport-web";

const server = new URLSearchParams(location.search).get("server");
try {
  const client = connect(server);
  const model = await client.load("minilm");
  const trial = await model.threadTrial;  // one thread timed against the page's threads, right after the load
  const { inputs } = await client.reference((await client.model("minilm")).variants[model.choice.variant]);
  const { outputs } = await model.run(inputs);
  const { runtime, variant, threads, verification } = model.choice;
  window.result = { runtime, variant, threads, trial, verification: verification.status,
                    isolated: crossOriginIsolated, embedding: Array.from(outputs.sentence_embedding.data) };
} catch (error) {
  window.result = { error: error.message };
}
document.body.dataset.done = "true";
"""


def _run(command: list[str], cwd: Path, timeout: float) -> str:
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false"}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def vite_app(tmp_path_factory) -> tuple[Path, dict[str, float]]:
    """A fresh Vite project with the packed library installed and built: (its dist folder, seconds per step)."""
    root = tmp_path_factory.mktemp("vite")
    seconds = {}
    started = time.perf_counter()
    tarball = root / pack(root, dry_run=False)["filename"]
    seconds["npm pack"] = time.perf_counter() - started
    app = root / "app"
    app.mkdir()
    (app / "package.json").write_text(
        json.dumps(
            {
                "name": "a-vite-app",
                "private": True,
                "type": "module",
                "dependencies": {"onnxport-web": f"file:{tarball}"},
                "devDependencies": {"vite": VITE_VERSION},
            },
            indent=2,
        )
    )
    (app / "index.html").write_text(INDEX_HTML)
    (app / "main.js").write_text(MAIN_JS)
    started = time.perf_counter()
    _run(["npm", "install", "--prefer-offline"], app, timeout=600)
    seconds["npm install"] = time.perf_counter() - started
    assert (app / "node_modules" / "onnxport-web" / "types" / "index.d.ts").is_file()
    assert not (app / "node_modules" / "onnxruntime-web").exists(), "the package pulled in onnxruntime-web"
    started = time.perf_counter()
    _run([str(app / "node_modules" / ".bin" / "vite"), "build"], app, timeout=300)
    seconds["vite build"] = time.perf_counter() - started
    return app / "dist", seconds


@pytest.fixture
def serve_dist():
    """serve_dist(folder, port) -> the URL of a cross-origin isolated static server of folder on its own origin."""
    with contextlib.ExitStack() as servers:
        yield lambda folder, port: servers.enter_context(isolated_files(folder, port))


def test_a_vite_build_of_the_package_runs_minilm_from_another_origin_with_threads(
    vite_app, serve_dist, spawn_server, demo_repository, open_tab, v2_codec
):
    started = time.perf_counter()
    dist, seconds = vite_app
    built = [path for path in dist.rglob("*") if path.is_file()]
    assert not [p.name for p in built if p.suffix == ".wasm" or p.name.startswith("ort")], "onnxruntime-web got bundled"
    bundle_bytes = sum(p.stat().st_size for p in built)
    assert bundle_bytes <= MAX_BUNDLE_BYTES, f"the built app is {bundle_bytes} bytes: {[p.name for p in built]}"
    assert any("worker" in p.name for p in built), "Vite did not bundle the library's worker"

    page_port, server_port = free_port(), free_port()
    page = serve_dist(dist, page_port)
    server = spawn_server(
        ["serve", "--repository", str(demo_repository), "--port", str(server_port)],
        server_port,
        env={"ONNXPORT_CORS_ORIGINS": page.rstrip("/")},
    )
    tab = open_tab()
    tab.page.goto(f"{page}?server={server}/")
    expect(tab.page.locator("body[data-done=true]")).to_have_count(1, timeout=RUN_TIMEOUT_MS)
    result = tab.page.evaluate("() => window.result")

    assert "error" not in result, result["error"]
    assert result["isolated"] is True
    # Threads ran there: the trial timed one thread against the page's threads (2 or more), and the model runs the
    # count it kept.
    assert result["runtime"] == "wasm" and re.search(r"\b[2-9] threads took ", result["trial"]["why"]), result
    assert result["threads"] == result["trial"]["threads"], result
    assert result["verification"] == "passed"
    assert any(url.startswith(page) and "worker" in url for url in tab.requests), "the worker is not the bundle's"
    ort_files = [url for url in tab.requests if "/ort/" in url]
    assert ort_files and all(url.startswith(server) for url in ort_files), ort_files
    assert tab.artifact_requests() and all(url.startswith(server) for url in tab.artifact_requests())

    # The server's own answer (V2) on the same inputs, for the same variant.
    manifest = json.loads((demo_repository / "manifest.json").read_text())
    record = manifest["models"]["minilm"]["variants"][result["variant"]]
    inputs = tensor_json.decode(json.loads((demo_repository / record["reference"]["file"]).read_text())["inputs"])
    request = urllib.request.Request(
        f"{server}/v2/models/minilm/versions/{result['variant']}/infer",
        data=v2_codec.json_request(inputs),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        _, answer = v2_codec.parse_response(response.read(), response.headers.get("Inference-Header-Content-Length"))
    expected = answer["sentence_embedding"].reshape(-1)
    got = np.array(result["embedding"], dtype=np.float32)
    tolerance = browser_tolerances.lookup(result["variant"], "wasm")
    worst = float(np.abs(got - expected).max())
    assert got.shape == expected.shape and worst <= tolerance.abs, (result["variant"], worst, tolerance.abs)
    seconds["page"] = time.perf_counter() - started
    print(
        f"vite test: {bundle_bytes} bytes built; {result['variant']} on wasm x{result['threads']}, "
        f"max |browser - server| {worst:.3g} "
        f"(abs {tolerance.abs}); " + ", ".join(f"{step} {s:.1f} s" for step, s in seconds.items())
    )
