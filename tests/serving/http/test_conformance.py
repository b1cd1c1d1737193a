"""What the conformance page needs from the server (server/onnxport/serving/http/conformance.py), through the test
client: the golden data, the page itself with its isolation headers, and /debug/ for --locate."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import onnx
import pytest
from flask.testing import FlaskClient
from onnx import numpy_helper

from fixtures.servers import buffered_client
from onnxport.serving.app import create_app

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def client_for(**config) -> FlaskClient:
    return buffered_client(create_app(config))


def raw_get(client, raw_path: str):
    """GET a path exactly as a browser would send it, without the test client's normalizing."""
    return client.get(
        "/", environ_overrides={"PATH_INFO": unquote(raw_path), "REQUEST_URI": raw_path, "RAW_URI": raw_path}
    )


@pytest.fixture(autouse=True)
def _no_environment_settings(monkeypatch):
    for name in ("ONNXPORT_DEBUG_ROOT", "ONNXPORT_TOLERANCES_FILE", "ONNXPORT_CONFIG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def client(demo_repository):
    return client_for(repository=demo_repository)


def decode(tensor: dict) -> np.ndarray:
    assert set(tensor) == {"dtype", "shape", "data"}, tensor.keys()
    dtype = np.dtype(tensor["dtype"]).newbyteorder("<")
    return np.frombuffer(base64.b64decode(tensor["data"], validate=True), dtype=dtype).reshape(tensor["shape"])


def read_pb(path: Path) -> np.ndarray:
    proto = onnx.TensorProto()
    proto.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(proto)


# --------------------------------------------------------------------------- golden data


@pytest.mark.parametrize("model", ["digits", "iris", "minilm"])
def test_golden_data_is_the_testdata_pb_files(client, demo_repository, demo_manifest, model):
    entry = demo_manifest["models"][model]
    response = client.get(f"/api/models/{model}/golden")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert body["model"] == model

    folder = demo_repository / entry["golden"]["path"]
    set_dirs = sorted(folder.glob("test_data_set_*"))
    assert len(body["sets"]) == len(set_dirs) == entry["golden"]["sets"]
    for served, set_dir in zip(body["sets"], set_dirs):
        for part, prefix, names in (("inputs", "input", entry["inputs"]), ("outputs", "output", entry["outputs"])):
            assert list(served[part]) == [n["name"] for n in names], part
            for k, spec in enumerate(names):
                expected = read_pb(set_dir / f"{prefix}_{k}.pb")
                got = decode(served[part][spec["name"]])
                assert served[part][spec["name"]]["dtype"] == expected.dtype.name == spec["dtype"]
                assert got.shape == expected.shape, (spec["name"], got.shape, expected.shape)
                assert np.array_equal(got, expected), spec["name"]


def test_digits_golden_inputs_are_the_whole_set_in_float32(client, demo_repository, demo_manifest):
    entry = demo_manifest["models"]["digits"]
    body = client.get("/api/models/digits/golden").get_json()
    pixels = decode(body["sets"][0]["inputs"]["pixels"])
    logits = decode(body["sets"][0]["outputs"]["logits"])
    folder = demo_repository / entry["golden"]["path"] / "test_data_set_0"
    assert pixels.dtype == np.float32 and pixels.shape[1:] == (1, 8, 8)
    assert logits.dtype == np.float32 and logits.shape == (pixels.shape[0], 10)
    assert np.array_equal(pixels, read_pb(folder / "input_0.pb"))
    assert np.array_equal(logits, read_pb(folder / "output_0.pb"))


def test_golden_of_an_unknown_model_is_a_json_404_naming_it(client, assert_json_error):
    assert_json_error(client.get("/api/models/no-such-model/golden"), 404, "no-such-model")


# --------------------------------------------------------------------------- the page


def test_conformance_is_the_app_page_with_csp_and_cross_origin_isolation(client):
    response = client.get("/conformance?autorun=1&models=iris")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    assert b'src="/web/app/main.js"' in response.data
    assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    csp = response.headers["Content-Security-Policy"]
    directives = {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}
    assert directives["default-src"] == ["'self'"]
    assert "'self'" in directives["script-src"]
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert directives["object-src"] == ["'none'"]
    # The inline import map is allowed by its hash alone.
    for body in re.findall(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", response.data, re.S):
        digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
        assert f"'sha256-{digest}'" in directives["script-src"]
    # The same document and headers as the app's front page.
    front = client.get("/")
    assert front.data == response.data
    assert front.headers["Content-Security-Policy"] == csp


# --------------------------------------------------------------------------- /debug/


def test_debug_is_a_json_404_when_the_server_has_no_debug_root(demo_repository, assert_json_error):
    client = client_for(repository=demo_repository)
    assert_json_error(client.get("/debug/x"), 404)
    assert_json_error(client.get("/debug/x.onnx"), 404)


@pytest.fixture
def debug_setup(tmp_path, demo_repository):
    """(client, debug_root, secret): a server with a debug root, and a file beside (not in) it."""
    root = tmp_path / "debug"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"outside the debug root")
    return client_for(repository=demo_repository, debug_root=str(root)), root, secret


def test_debug_serves_a_file_from_the_debug_root_uncached(debug_setup):
    client, root, _ = debug_setup
    data = b"\x08\x07" + os.urandom(2000)
    (root / "abc.onnx").write_bytes(data)
    response = client.get("/debug/abc.onnx")
    assert response.status_code == 200
    assert response.data == data
    assert response.headers["Cache-Control"] == "no-store"
    assert int(response.headers["Content-Length"]) == len(data)
    # Fetched by a cross-origin-isolated page: the isolation headers are on it too.
    assert response.headers["Cross-Origin-Resource-Policy"] == "same-origin"


def test_debug_serves_from_a_sub_folder_and_404s_a_missing_file(debug_setup, assert_json_error):
    client, root, _ = debug_setup
    (root / "sub").mkdir()
    (root / "sub" / "m.onnx").write_bytes(b"model")
    assert client.get("/debug/sub/m.onnx").data == b"model"
    assert_json_error(client.get("/debug/missing.onnx"), 404)
    assert_json_error(client.get("/debug/sub"), 404)  # a folder is not a file


@pytest.mark.parametrize(
    "raw_path",
    [
        "/debug/../secret.txt",
        "/debug/%2e%2e/secret.txt",
        "/debug/..%2fsecret.txt",
        "/debug/sub/../../secret.txt",
        "/debug/%2e%2e%2fsecret.txt",
        "/debug/..%5csecret.txt",
        "/debug/%2f{secret}",
        "/debug//{secret}",
        "/debug/abc.onnx%00.txt",
    ],
)
def test_debug_refuses_traversal_out_of_the_debug_root(debug_setup, assert_json_error, raw_path):
    client, root, secret = debug_setup
    (root / "sub").mkdir()
    (root / "abc.onnx").write_bytes(b"model")
    response = raw_get(client, raw_path.replace("{secret}", str(secret).lstrip("/")))
    assert secret.read_bytes() not in response.data
    assert_json_error(response, 404)


def test_debug_refuses_a_symlink_out_of_the_debug_root(debug_setup, assert_json_error):
    client, root, secret = debug_setup
    (root / "link.onnx").symlink_to(secret)
    response = client.get("/debug/link.onnx")
    assert secret.read_bytes() not in response.data
    assert_json_error(response, 404)


def test_debug_root_from_the_environment(tmp_path, demo_repository, monkeypatch):
    """`onnxport check --locate` hands the folder to its server as $ONNXPORT_DEBUG_ROOT."""
    root = tmp_path / "env-debug"
    root.mkdir()
    (root / "m.onnx").write_bytes(b"from env")
    monkeypatch.setenv("ONNXPORT_DEBUG_ROOT", str(root))
    client = client_for(repository=demo_repository)
    assert client.get("/debug/m.onnx").data == b"from env"


def test_golden_json_is_strict_json(client):
    """The page parses it with JSON.parse: no NaN or Infinity tokens."""
    text = client.get("/api/models/iris/golden").get_data(as_text=True)
    json.loads(text, parse_constant=lambda token: pytest.fail(f"non-JSON token {token}"))
