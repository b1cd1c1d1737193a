"""The wheel is the whole tool: built from this checkout, installed with its core dependencies only into a new
virtual environment outside the checkout, it imports ONNX test directories, serves them, and Chromium runs
web/examples/index.html from that server with the server's result. Then the README `onnxport init` writes is
followed as written: its fenced commands run in the project (extras from the wheel, build, serve, import,
check) and the example page it links runs the project's model. Then, with [browser] added, `onnxport check`.

Slow (minutes): a wheel build, a fresh install from the package index (pip's local files here), imports, a
server and Chromium. Every command runs the venv's own `onnxport` in an empty folder with a clean environment.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from playwright.sync_api import expect
from readme_commands import commands, links

from onnxport.accuracy import browser_tolerances
from onnxport.harness.process import free_port
from onnxport.repository import testdata

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[2]
BACKEND_TEST = CHECKOUT / "tests" / "data" / "onnx-backend" / "test_Linear"  # `make onnx-testdata` fetches it
# The first golden row of the iris-shaped test directory: what web/examples/index.html runs first.
IRIS_ROW = np.array([[6.9, 3.1, 5.4, 2.1]], dtype=np.float32)
INSTALL_TIMEOUT = 1200
RUN_TIMEOUT_MS = 120_000
# A wheel carries onnxruntime-web's WebAssembly files (about 40 MB, 10 MB compressed), not all of dist/ (136 MB).
WHEEL_LIMIT = 20 * 1024 * 1024


def _run(args: list, cwd: Path, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def _iris_test_directory(folder: Path) -> Path:
    """An ONNX test directory shaped like the example page's iris: features [batch, 4] -> label, probabilities."""
    weight = np.array([[0.4, 0.1, -0.3], [0.9, -0.2, -0.4], [-1.2, 0.3, 0.8], [-1.1, 0.2, 1.5]], dtype=np.float32)
    bias = np.array([2.0, 0.8, -2.5], dtype=np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["features", "W"], ["scores"], name="matmul"),
            helper.make_node("Add", ["scores", "b"], ["logits"], name="add"),
            helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
            helper.make_node("ArgMax", ["logits"], ["label"], name="argmax", axis=1, keepdims=0),
        ],
        "iris",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"]),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 3]),
        ],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b")],
    )
    folder.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "model.onnx")
    features = np.concatenate([IRIS_ROW, np.random.default_rng(0).uniform(0.1, 8, (7, 4)).astype(np.float32)])
    logits = features @ weight + bias
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities = (exp / exp.sum(1, keepdims=True)).astype(np.float32)
    data = folder / "test_data_set_0"
    data.mkdir()
    for prefix, k, name, value in (
        ("input", 0, "features", features),
        ("output", 0, "label", logits.argmax(1).astype(np.int64)),
        ("output", 1, "probabilities", probabilities),
    ):
        (data / f"{prefix}_{k}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())
    return folder


def _clean_environment(venv: Path) -> dict:
    """This process's environment without anything that points Python or onnxport elsewhere; the venv first on PATH."""
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("ONNXPORT_", "PYTHON", "VIRTUAL_ENV", "PYTEST"))
    }
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return environment


@pytest.fixture(scope="module")
def wheel_install(tmp_path_factory):
    """The wheel built from this checkout's files, installed with its core dependencies into a new venv.

    Yields (venv, wheel path, environment, an empty working folder, seconds the install took).
    """
    work = tmp_path_factory.mktemp("wheel")
    # The checkout's files (tracked, and new ones not ignored), so the build leaves nothing in the checkout.
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=CHECKOUT, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    source = work / "source"
    for relative in filter(None, listed):
        if (CHECKOUT / relative).is_file():
            (source / relative).parent.mkdir(parents=True, exist_ok=True)
            (source / relative).write_bytes((CHECKOUT / relative).read_bytes())
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", work / "dist", source],
        work,
        {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
        timeout=INSTALL_TIMEOUT,
    )
    wheel = next((work / "dist").glob("onnxport-*.whl"))
    venv = work / "venv"
    environment = _clean_environment(venv)
    # sys.executable is the checkout's venv; `-m venv` makes the new one from its base interpreter.
    _run([sys.executable, "-m", "venv", venv], work, environment)
    began = time.monotonic()
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", wheel], work, environment, timeout=INSTALL_TIMEOUT)
    seconds = time.monotonic() - began
    empty = work / "project"
    empty.mkdir()
    print(f"\nwheel {wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB; core install {seconds:.0f} s")
    yield venv, wheel, environment, empty, seconds


def test_the_wheel_carries_the_web_side_and_nothing_of_dist_it_does_not_load(wheel_install):
    _, wheel, _, _, _ = wheel_install
    assert wheel.stat().st_size < WHEEL_LIMIT, f"{wheel.name}: {wheel.stat().st_size:,} bytes"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        sources = json.loads(archive.read("onnxport/_web/SOURCES.json"))
    for page in ["index.html", "style.css", "favicon.svg", "examples/index.html", "lib/index.js", "app/main.js"]:
        assert f"onnxport/_web/web/{page}" in names, page
    ort = {n.rsplit("/", 1)[1] for n in names if n.startswith("onnxport/_web/ort/")}
    assert {"ort.wasm.min.mjs", "ort-wasm-simd-threaded.wasm"} <= ort, ort
    assert not any(n.endswith(".map") or "ort.all" in n for n in ort), ort
    lock = json.loads((CHECKOUT / "package-lock.json").read_text())["packages"]
    for package, entry in sources.items():
        assert entry["integrity"] == lock[f"node_modules/{package}"]["integrity"], package
    # Nothing of the checkout but the package and its web side.
    assert not [n for n in names if not n.startswith(("onnxport/", "onnxport-"))]
    # The size the README and docs/guide/install.md give, within 5% of this wheel's.
    megabytes = wheel.stat().st_size / 1e6
    for page, pattern in (("README.md", r"an? ([\d.]+) MB wheel"), ("docs/guide/install.md", r"\.whl, ([\d.]+) MB")):
        said = re.search(pattern, (CHECKOUT / page).read_text())
        assert said and abs(float(said[1]) - megabytes) <= 0.05 * megabytes, (page, said and said[1], megabytes)


def test_installed_from_the_wheel_it_imports_serves_and_runs_the_example_page(wheel_install, chromium, v2_codec):
    venv, _, environment, folder, _ = wheel_install
    python = venv / "bin" / "python"
    probe = _run(
        [
            python,
            "-c",
            "import json, sys, onnxport.project as p; "
            "print(json.dumps({'path': sys.path, 'file': p.__file__, 'checkout': str(p.CHECKOUT)}))",
        ],
        folder,
        environment,
    )
    seen = json.loads(probe.stdout)
    assert not [entry for entry in seen["path"] if str(CHECKOUT) in entry], seen["path"]
    assert seen["file"].startswith(str(venv)) and seen["checkout"] == "None", seen
    no_torch = subprocess.run(
        [python, "-c", "import torch"], cwd=folder, env=environment, capture_output=True, text=True
    )
    assert no_torch.returncode != 0 and "No module named 'torch'" in no_torch.stderr, no_torch.stderr

    onnxport = venv / "bin" / "onnxport"
    _run(
        [onnxport, "import", _iris_test_directory(folder.parent / "iris"), "--name", "iris", "--quiet"],
        folder,
        environment,
    )
    _run([onnxport, "import", BACKEND_TEST, "--name", "linear", "--quiet"], folder, environment)
    assert sorted(json.loads((folder / "onnxport-repository" / "manifest.json").read_text())["models"]) == [
        "iris",
        "linear",
    ]

    port = free_port()
    log = folder.parent / "serve.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [onnxport, "serve", "--port", str(port)], cwd=folder, env=environment, stdout=out, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(server, base, log)
        _linear_answers_its_test_data(base, v2_codec)
        # The files the library loads are served; the rest of onnxruntime-web's dist/ is not in the package.
        assert _status(f"{base}/ort/ort.wasm.min.mjs") == 200
        assert _status(f"{base}/ort/ort.all.min.mjs") == 404
        # No ?model=: the page runs the first model the manifest serves, on its first golden row.
        feeds = _example_page_runs(chromium, f"{base}/web/examples/index.html", base, "iris", v2_codec)
        np.testing.assert_array_equal(feeds["features"], IRIS_ROW)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_init_readme_runs_as_written(wheel_install, chromium, v2_codec):
    """`onnxport init`, then every command of its README's fenced blocks, in order, in the project, as written.

    What stands in for the user: the wheel's path needs none (pip recorded it and the README names it; the test
    fails if it does not); `onnxport serve` runs in the background on a free port (ONNXPORT_PORT, the only
    setting given; the README's links are opened on that port) while the later commands run, as in a second
    terminal; `model.onnx` of `onnxport import model.onnx` is the user's own file: an iris-shaped classifier.
    """
    venv, wheel, environment, folder, _ = wheel_install
    _run([venv / "bin" / "onnxport", "init", "first-steps"], folder.parent, environment)
    project = folder.parent / "first-steps"
    readme = (project / "README.md").read_text()
    lines = commands(readme)
    assert f"pip install '{wheel}[sklearn]'" in readme and not re.search(r"path/to|onnxport\[", readme), readme
    assert [c.split("  #")[0] for c in lines if c.startswith("onnxport serve")] == ["onnxport serve"], lines
    (project / "model.onnx").write_bytes(
        (_iris_test_directory(folder.parent / "users-model") / "model.onnx").read_bytes()
    )

    port = free_port()
    environment = {**environment, "ONNXPORT_PORT": str(port)}
    base = f"http://127.0.0.1:{port}"
    log = folder.parent / "first-steps-serve.log"
    server = None
    try:
        for line in lines:
            began = time.monotonic()
            if line.startswith("onnxport serve"):
                with open(log, "wb") as out:
                    server = subprocess.Popen(
                        ["bash", "-c", line],
                        cwd=project,
                        env=environment,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                _wait_ready(server, base, log)
            else:
                _run(["bash", "-c", line], project, environment, timeout=INSTALL_TIMEOUT)
            print(f"{time.monotonic() - began:6.1f} s  {line}")
        assert server is not None
        served = json.loads((project / "onnxport-repository" / "manifest.json").read_text())["models"]
        assert sorted(served) == ["example", "mine"], sorted(served)
        pages = [link.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for link in links(readme)]
        assert pages == [f"{base}/web/examples/index.html?model=example"], links(readme)
        _example_page_runs(chromium, pages[0], base, "example", v2_codec)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)


def _example_page_runs(chromium, url: str, base: str, model: str, v2_codec) -> dict:
    """web/examples/index.html at url runs `model` in Chromium, and each output is the server's V2 answer for the
    variant it chose on the same inputs, within that runtime's tolerance; returns the inputs it ran."""
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(url)
        expect(page.locator("body[data-done=true]")).to_have_count(1, timeout=RUN_TIMEOUT_MS)
        expect(page.locator("#status")).to_have_text("Done.")
        shown = {
            key: page.locator("body").get_attribute(f"data-{key}")
            for key in ("model", "variant", "runtime", "inputs", "outputs")
        }
    finally:
        context.close()
    assert shown["model"] == model, shown
    feeds = {
        name: np.array(tensor["data"], dtype=tensor["type"]).reshape(tensor["dims"])
        for name, tensor in json.loads(shown["inputs"]).items()
    }
    expected = _infer(base, f"{model}/versions/{shown['variant']}", feeds, v2_codec)
    bound = 0.0 if shown["runtime"] == "server" else browser_tolerances.lookup(shown["variant"], shown["runtime"]).abs
    for name, values in json.loads(shown["outputs"]).items():
        np.testing.assert_allclose(
            np.array(values),
            expected[name].reshape(-1).astype(np.float64),
            rtol=0,
            atol=bound,
            err_msg=f"{model} {shown['variant']} on {shown['runtime']}: {name}",
        )
    print(f"{url}: {model} {shown['variant']} on {shown['runtime']}, outputs within {bound} of the server's")
    return feeds


def _linear_answers_its_test_data(base: str, v2_codec) -> None:
    """The imported backend test directory: the server's answer is the directory's expected output."""
    model = onnx.load(BACKEND_TEST / "model.onnx")
    inputs = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    outputs = [o.name for o in model.graph.output]
    feeds, expected = testdata.read_sets(BACKEND_TEST, inputs, outputs)[0]
    got = _infer(base, "linear", feeds, v2_codec)
    for name in outputs:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-5, err_msg=name)


def _infer(base: str, model: str, feeds: dict, v2_codec) -> dict:
    request = urllib.request.Request(
        f"{base}/v2/models/{model}/infer",
        data=v2_codec.json_request(feeds),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return v2_codec.parse_response(response.read(), None)[1]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        error.close()
        return error.code


def _wait_ready(server: subprocess.Popen, base: str, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if server.poll() is not None:
            pytest.fail(f"`onnxport serve` exited with {server.returncode}:\n{log.read_text()}")
        try:
            if _status(f"{base}/v2/health/ready") == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"`onnxport serve` not ready after {timeout:.0f} s:\n{log.read_text()}")
        time.sleep(0.2)
