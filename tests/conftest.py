"""Shared fixtures: the real CLI, a built demo repository, and a folder of tiny recipes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from onnxport import cli

# A real recipe, in the pattern of models/iris.py but trained in milliseconds. The
# upper-case constants are knobs: write_recipe() rewrites them to make variants of it
# (another name, other weights, outputs the export cannot match, a load that fails).
# An MLP rather than a LogisticRegression: linear models export to ai.onnx.ml operators
# only, and int8 quantization of those crashes (see test_variants.py).
TINY_RECIPE = '''\
"""A scaler and an 8-unit MLP on iris: the smallest real recipe, for tests."""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance

NAME = "tiny"
ALPHA = 1e-4
SHIFT = 0.0
LOAD_ERROR = None


def load() -> SourceModel:
    from sklearn.datasets import load_iris
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    features, labels = load_iris(return_X_y=True)
    features = features.astype(np.float32)
    train_x, test_x = features[0::2], features[1::2]
    model = make_pipeline(
        StandardScaler(),
        MLPClassifier(hidden_layer_sizes=(8,), solver="lbfgs", alpha=ALPHA, max_iter=1000, random_state=0),
    ).fit(train_x, labels[0::2])
    if LOAD_ERROR is not None:
        raise LOAD_ERROR

    def run(feeds):
        x = feeds["features"]
        return {
            "label": model.predict(x).astype(np.int64),
            "probabilities": model.predict_proba(x).astype(np.float32) + np.float32(SHIFT),
        }

    return SourceModel(
        framework="sklearn",
        model=model,
        input_names=["features"],
        output_names=["label", "probabilities"],
        dynamic_axes={"features": {0: "batch"}},
        sample_inputs={"features": test_x[:1]},
        golden_inputs={"features": test_x},
        calibration_inputs=[{"features": train_x[i : i + 25]} for i in range(0, len(train_x), 25)],
        run=run,
        facts={"test_accuracy": float(model.score(test_x, labels[1::2]))},
        golden_labels=labels[1::2].astype(np.int64),
    )


RECIPE = Recipe(
    name=NAME,
    task="classification",
    description="Iris species by a small MLP (test recipe).",
    load=load,
    tolerance=Tolerance(abs=1e-5, rel=1e-4),
    metric_output="probabilities",
)
'''


def tiny_recipe_text(**knobs: str) -> str:
    """TINY_RECIPE with knobs set to Python source, e.g. tiny_recipe_text(SHIFT="1.0")."""
    lines = TINY_RECIPE.splitlines(keepends=True)
    for knob, source in knobs.items():
        index = next(i for i, line in enumerate(lines) if line.startswith(f"{knob} = "))
        lines[index] = f"{knob} = {source}\n"
    return "".join(lines)


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path, monkeypatch):
    # onnxruntime's symbolic shape inference drops temporary files into the working folder.
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def run_cli(capsys):
    """Run `onnxport ARGS...` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: object) -> tuple[int, str, str]:
        capsys.readouterr()  # drop whatever earlier steps printed
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def assert_one_line_error():
    """The failure contract of the CLI: stderr is one line, `onnxport: error: ...`, naming things."""

    def check(err: str, *fragments: str) -> None:
        lines = err.splitlines()
        assert len(lines) == 1, f"expected one stderr line, got {len(lines)}:\n{err}"
        assert lines[0].startswith("onnxport: error: "), lines[0]
        for fragment in fragments:
            assert str(fragment) in lines[0], f"{fragment!r} not in {lines[0]!r}"

    return check


@pytest.fixture
def recipes_dir(tmp_path) -> Path:
    """A recipes folder holding tiny.py; write_recipe() adds more."""
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "tiny.py").write_text(TINY_RECIPE)
    return folder


@pytest.fixture
def write_recipe(recipes_dir):
    """write_recipe(stem, text=None, **knobs) -> path of recipes_dir/stem.py.

    Without text, the tiny recipe with its knobs set (Python source, e.g. SHIFT="1.0");
    NAME defaults to the stem, as a recipe's name must.
    """

    def write(stem: str, text: str | None = None, **knobs: str) -> Path:
        path = recipes_dir / f"{stem}.py"
        path.write_text(text if text is not None else tiny_recipe_text(**{"NAME": repr(stem), **knobs}))
        return path

    return write


@pytest.fixture(scope="session")
def demo_repository(tmp_path_factory) -> Path:
    """Every demo recipe (iris, digits, minilm) built once, through the real CLI."""
    root = tmp_path_factory.mktemp("demo")
    repository = root / "repository"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        code = cli.main(["--repository", str(repository), "build", "--quiet"])
    assert code == 0, "building the demo models failed; see the captured stderr"
    return repository


# --------------------------------------------------------------------------- server tests
#
# Shared by test_protocol, test_config, test_v2_api, test_artifacts, test_catalog and
# test_live_server: the one error-shape check, the demo manifest and golden inputs, a local
# onnxruntime reference, copies of the demo repository, and real `onnxport serve` processes.

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Rows of the golden inputs the server tests send (None = all): minilm's 8 sentences are cut to 2.
GOLDEN_ROWS = {"iris": None, "digits": None, "minilm": 2}


@pytest.fixture
def assert_json_error():
    """assert_json_error(response, status, *fragments) -> the message.

    The one failure contract of the server: the status, Content-Type application/json and a body
    that is exactly {"error": "<non-empty message>"} containing every fragment. `response` is a
    Flask test response or anything with status_code (or status), headers and data.
    """

    def check(response, status: int, *fragments: object) -> str:
        code = getattr(response, "status_code", None)
        if code is None:
            code = response.status
        data = response.get_data() if hasattr(response, "get_data") else response.data
        assert code == status, f"expected HTTP {status}, got {code}: {data[:500]!r}"
        content_type = response.headers.get("Content-Type", "")
        assert content_type.split(";")[0].strip() == "application/json", (
            f"error Content-Type is {content_type!r}, not application/json: {data[:500]!r}"
        )
        body = json.loads(data)
        assert isinstance(body, dict) and list(body) == ["error"], f"body is not exactly {{'error': ...}}: {body!r}"
        message = body["error"]
        assert isinstance(message, str) and message.strip(), f"empty error message: {body!r}"
        for fragment in fragments:
            assert str(fragment) in message, f"{fragment!r} not in {message!r}"
        return message

    return check


@pytest.fixture(scope="session")
def demo_manifest(demo_repository) -> dict:
    return json.loads((demo_repository / "manifest.json").read_text())


@pytest.fixture(scope="session")
def golden_inputs(demo_repository, demo_manifest):
    """golden_inputs(model) -> {input name: array}, the model's golden inputs (GOLDEN_ROWS rows)."""
    import onnx
    from onnx import numpy_helper

    cache: dict[str, dict] = {}

    def load(model: str) -> dict:
        if model not in cache:
            entry = demo_manifest["models"][model]
            folder = demo_repository / entry["golden"]["path"] / "test_data_set_0"
            feeds = {}
            for index in range(len(entry["inputs"])):
                tensor = onnx.TensorProto()
                tensor.ParseFromString((folder / f"input_{index}.pb").read_bytes())
                feeds[tensor.name] = numpy_helper.to_array(tensor)
            assert sorted(feeds) == sorted(i["name"] for i in entry["inputs"]), feeds.keys()
            rows = GOLDEN_ROWS.get(model)
            cache[model] = {k: v[:rows] if rows else v for k, v in feeds.items()}
        return {k: v.copy() for k, v in cache[model].items()}

    return load


@pytest.fixture(scope="session")
def reference_outputs(demo_repository, demo_manifest):
    """reference_outputs(model, variant, feeds) -> {output name: array} from a local onnxruntime
    session on the same artifact file, with the server's default session options (intra-op
    threads 0 = all cores, inter-op 1, CPU), so float outputs can be compared exactly."""
    import onnxruntime as ort

    sessions: dict[Path, ort.InferenceSession] = {}
    lock = threading.Lock()

    def run(model: str, variant: str, feeds: dict) -> dict:
        record = demo_manifest["models"][model]["variants"][variant]
        path = demo_repository / record["file"]
        with lock:
            if path not in sessions:
                options = ort.SessionOptions()
                options.intra_op_num_threads = 0
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                sessions[path] = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            session = sessions[path]
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds)))

    return run


@pytest.fixture
def repository_copy(demo_repository, tmp_path):
    """repository_copy(models=None, keep_files_of=()) -> a private copy of the demo repository.

    shutil.copytree of the shared repository; with `models`, the manifest keeps only those models
    and only their files (plus the files of `keep_files_of`) are copied, which keeps minilm's
    180 MB out of tests that do not need it. The shared repository is never touched.
    """
    from onnxport.repository.store import referenced_files

    counter = iter(range(1000))

    def copy(models=None, keep_files_of=()) -> Path:
        manifest = json.loads((demo_repository / "manifest.json").read_text())
        destination = tmp_path / f"repository-{next(counter)}"
        if models is None:
            shutil.copytree(demo_repository, destination, ignore=shutil.ignore_patterns(".lock", ".staging"))
            return destination
        wanted = {*models, *keep_files_of}
        keep = {rel for name in wanted for rel in referenced_files(manifest["models"][name])}

        def ignore(folder: str, names: list[str]) -> set[str]:
            relative = Path(folder).relative_to(demo_repository)
            if relative.parts and relative.parts[0] == "testdata" and len(relative.parts) >= 2:
                return set()  # inside a kept golden folder
            ignored = set()
            for name in names:
                rel = (relative / name).as_posix()
                if rel in ("manifest.json", "artifacts", "testdata"):
                    continue
                if rel not in keep:
                    ignored.add(name)
            return ignored

        shutil.copytree(demo_repository, destination, ignore=ignore)
        manifest["models"] = {k: v for k, v in manifest["models"].items() if k in models}
        write_manifest_atomically(destination, manifest)
        return destination

    return copy


def write_manifest_atomically(repository: Path, manifest: dict) -> None:
    """Replace manifest.json the way a build does: write a temporary file, then rename over it."""
    temporary = repository / ".manifest.json.test-tmp"
    temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    os.replace(temporary, repository / "manifest.json")


@pytest.fixture
def replace_manifest():
    """replace_manifest(repository, manifest): the atomic rename a build ends with."""
    return write_manifest_atomically


class BufferedClient(FlaskClient):
    """Reads each response whole and closes it, as a WSGI server does: a file response left open
    would be a ResourceWarning (an error under this suite's warning filter)."""

    def open(self, *args, **kwargs):
        kwargs.setdefault("buffered", True)
        return super().open(*args, **kwargs)


def buffered_client(app) -> FlaskClient:
    """A test client of `app` that reads every response whole (see BufferedClient)."""
    app.test_client_class = BufferedClient
    return app.test_client()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(args: list[str], port: int, log_path: Path, *, env: dict[str, str] | None = None,
                 probe: str = "/v2/health/ready", timeout: float = 60.0) -> tuple[subprocess.Popen, str]:
    """Start `python -m onnxport ARGS` in the project folder; wait until GET probe is 200.

    ONNXPORT_* variables of the test environment are not passed on (only those in env).
    If the server never answers, it is stopped and the test fails with its captured log.
    """
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ONNXPORT_")}
    environment.update(env or {})
    environment["PYTHONUNBUFFERED"] = "1"
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "onnxport", *args], cwd=PROJECT_ROOT, env=environment,
        stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    last = "no answer"
    while True:
        if process.poll() is not None:
            pytest.fail(f"`onnxport {' '.join(args)}` exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(base_url + probe, timeout=2) as response:
                if response.status == 200:
                    return process, base_url
                last = f"HTTP {response.status}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read()[:200]!r}"
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            last = repr(exc)
        if time.monotonic() > deadline:
            stop_server(process)
            pytest.fail(f"`onnxport {' '.join(args)}`: GET {probe} not 200 after {timeout:.0f} s "
                        f"(last: {last}); server log:\n{log_path.read_text()}")
        time.sleep(0.1)


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def live_server(demo_repository, tmp_path_factory):
    """The base URL of a real `onnxport serve` (waitress) on the demo repository, on a free port."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("live-server") / "server.log"
    process, base_url = start_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)], port, log_path,
    )
    yield base_url
    stop_server(process)


@pytest.fixture
def spawn_server(tmp_path):
    """spawn_server(args, port, env=None, probe=...) -> base URL; stopped after the test."""
    processes: list[subprocess.Popen] = []

    def spawn(args: list[str], port: int, env: dict[str, str] | None = None, probe: str = "/v2/health/ready") -> str:
        process, base_url = start_server(args, port, tmp_path / f"server-{len(processes)}.log", env=env, probe=probe)
        processes.append(process)
        return base_url

    yield spawn
    for process in processes:
        stop_server(process)


class _V2Codec:
    """A V2 client's side of the wire format, written from the protocol text, not from server code:
    JSON and binary request bodies, and responses (JSON or binary) decoded into numpy arrays."""

    DATATYPE_OF = {
        "bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
        "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
        "float16": "FP16", "float32": "FP32", "float64": "FP64",
    }
    DTYPE_OF = {v: k for k, v in DATATYPE_OF.items()}

    def json_request(self, feeds: dict, *, outputs=None, request_id=None, binary_output: bool | None = None,
                     nested: bool = False) -> bytes:
        inputs = [
            {"name": name, "shape": list(value.shape), "datatype": self.DATATYPE_OF[value.dtype.name],
             "data": value.tolist() if nested else value.reshape(-1).tolist()}
            for name, value in feeds.items()
        ]
        return json.dumps(self._header(inputs, outputs, request_id, binary_output)).encode()

    def binary_request(self, feeds: dict, *, outputs=None, request_id=None,
                       binary_output: bool | None = True) -> tuple[bytes, int]:
        """(body, Inference-Header-Content-Length): every input as raw little-endian bytes."""
        import numpy as np

        inputs, chunks = [], []
        for name, value in feeds.items():
            raw = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
            inputs.append({"name": name, "shape": list(value.shape), "datatype": self.DATATYPE_OF[value.dtype.name],
                           "parameters": {"binary_data_size": len(raw)}})
            chunks.append(raw)
        header = json.dumps(self._header(inputs, outputs, request_id, binary_output)).encode()
        return header + b"".join(chunks), len(header)

    @staticmethod
    def _header(inputs, outputs, request_id, binary_output) -> dict:
        header: dict = {"inputs": inputs}
        if request_id is not None:
            header["id"] = request_id
        if outputs is not None:
            header["outputs"] = [{"name": o} if isinstance(o, str) else o for o in outputs]
        if binary_output is not None:
            header["parameters"] = {"binary_data_output": binary_output}
        return header

    def parse_response(self, body: bytes, header_length: int | str | None) -> tuple[dict, dict]:
        """(JSON header, {output name: array}) of an inference response."""
        import numpy as np

        if header_length is None:
            header, binary = json.loads(body), b""
        else:
            header_length = int(header_length)
            header, binary = json.loads(body[:header_length]), body[header_length:]
        values, offset = {}, 0
        for output in header["outputs"]:
            dtype = np.dtype(self.DTYPE_OF[output["datatype"]])
            if "data" in output:
                value = np.array(output["data"], dtype=dtype)
            else:
                size = output["parameters"]["binary_data_size"]
                assert offset + size <= len(binary), f"output {output['name']} runs past the body"
                value = np.frombuffer(binary[offset:offset + size], dtype=dtype.newbyteorder("<")).astype(dtype)
                offset += size
            values[output["name"]] = value.reshape(output["shape"])
        assert offset == len(binary), f"{len(binary) - offset} bytes after the last binary output"
        return header, values


@pytest.fixture(scope="session")
def v2_codec() -> _V2Codec:
    return _V2Codec()


@pytest.fixture
def served(demo_manifest):
    """served(model, variant): skip unless the demo build serves that variant."""

    def check(model: str, variant: str) -> None:
        record = demo_manifest["models"][model]["variants"][variant]
        if record["status"] != "ok":
            pytest.skip(f"{model} {variant} is not served: {record['status']}: {record['reason']}")

    return check


# --------------------------------------------------------------------------- browser tests
#
# test_browser*.py: one Playwright for the session, one Chromium without WebGPU and one with a
# software WebGPU adapter (SwiftShader); every test opens fresh contexts (fresh Cache Storage).


@pytest.fixture(scope="session")
def playwright_session():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright


def _launch_chromium(playwright, extra_args: list[str]):
    from browser_helpers import BROWSER_ARGS, CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM} (`make chromium` installs it)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[*BROWSER_ARGS, *extra_args])


@pytest.fixture(scope="session")
def chromium(playwright_session):
    """Chromium without WebGPU flags: no WebGPU adapter."""
    browser = _launch_chromium(playwright_session, [])
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def chromium_webgpu(playwright_session):
    """Chromium with WebGPU on SwiftShader (a fallback adapter without shader-f16)."""
    from browser_helpers import WEBGPU_ARGS

    browser = _launch_chromium(playwright_session, WEBGPU_ARGS)
    yield browser
    browser.close()


@pytest.fixture
def open_tab(chromium, live_server):
    """open_tab(route=None, *, browser=chromium, base_url=live_server, setup=None) -> Tab.

    A fresh context (its own Cache Storage) and page recording console errors, uncaught
    exceptions and every requested URL; setup(context) runs first (e.g. to add routes).
    With a route ("#/play/digits"), the page is opened there. Closed after the test.
    """
    from browser_helpers import PAGE_TIMEOUT_MS, Tab

    contexts = []

    def open_(route: str | None = None, *, browser=None, base_url: str | None = None, setup=None) -> Tab:
        context = (browser or chromium).new_context()
        contexts.append(context)
        context.set_default_timeout(PAGE_TIMEOUT_MS)
        if setup is not None:
            setup(context)
        page = context.new_page()
        tab = Tab(context=context, page=page, base_url=(base_url or live_server).rstrip("/"))
        context.on("request", lambda request: tab.requests.append(request.url))
        page.on("console", lambda message: tab.console_errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: tab.console_errors.append(f"uncaught: {error}"))
        if route is not None:
            tab.goto(route)
        return tab

    yield open_
    for context in contexts:
        context.close()


@pytest.fixture
def serve_repository(spawn_server):
    """serve_repository(repository) -> base URL of a real `onnxport serve` on it (stopped after the test)."""

    def serve(repository: Path) -> str:
        port = free_port()
        return spawn_server(["serve", "--repository", str(repository), "--port", str(port)], port)

    return serve
