"""The manifest, the content-addressed repository files and the web files, through the test client."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

from demo_variants import MODEL_VARIANTS, MODELS
from fixtures.servers import buffered_client
from onnxport.serving.app import create_app

PROJECT_ROOT = Path(__file__).resolve().parents[3]
ORT_DIST = PROJECT_ROOT / "node_modules" / "onnxruntime-web" / "dist"
IMMUTABLE = "public, max-age=31536000, immutable"


client_of = buffered_client


@pytest.fixture(scope="module")
def app(demo_repository):
    return create_app({"repository": demo_repository})


@pytest.fixture
def client(app):
    return client_of(app)


def raw_get(client, raw_path: str, **kw):
    """GET a path exactly as a client would send it (the test client would read `//x` as a host)."""
    return client.get(
        "/", environ_overrides={"PATH_INFO": unquote(raw_path), "REQUEST_URI": raw_path, "RAW_URI": raw_path}, **kw
    )


def referenced_files(manifest: dict) -> list[tuple[str, str, int]]:
    """(path, sha256, bytes) of every variant artifact and asset the manifest names."""
    files = []
    for entry in manifest["models"].values():
        for record in entry["variants"].values():
            if record.get("file"):
                files.append((record["file"], record["sha256"], record["bytes"]))
        for asset in entry.get("assets", {}).values():
            files.append((asset["file"], asset["sha256"], asset["bytes"]))
    return files


# --------------------------------------------------------------------------- the manifest


def test_manifest_is_the_manifest_json(client, demo_manifest):
    response = client.get("/api/manifest")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.json == demo_manifest
    assert response.headers["Cache-Control"] == "no-cache"
    etag, weak = response.get_etag()
    assert etag and not weak


def test_manifest_revalidates_with_if_none_match(client):
    etag = client.get("/api/manifest").headers["ETag"]
    response = client.get("/api/manifest", headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert response.data == b""
    assert client.get("/api/manifest", headers={"If-None-Match": '"something-else"'}).status_code == 200


# --------------------------------------------------------------------------- artifacts


@pytest.mark.parametrize("model, variant", MODEL_VARIANTS)
def test_variant_artifact(client, demo_repository, demo_manifest, model, variant):
    record = demo_manifest["models"][model]["variants"][variant]
    response = client.get(f"/repository/{record['file']}")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == IMMUTABLE
    assert response.headers["ETag"] == f'"{record["sha256"]}"'  # quoted: strong
    size = (demo_repository / record["file"]).stat().st_size
    assert int(response.headers["Content-Length"]) == record["bytes"] == size
    assert hashlib.sha256(response.data).hexdigest() == record["sha256"]
    assert response.headers["Cross-Origin-Resource-Policy"] == "same-origin"


def test_every_referenced_file_is_served_with_its_hash(client, demo_manifest):
    files = referenced_files(demo_manifest)
    assert any("tokenizer" in json.dumps(e.get("assets", {})) for e in demo_manifest["models"].values())
    for path, sha256, size in files:
        response = client.get(f"/repository/{path}")
        assert response.status_code == 200, path
        assert response.headers["Cache-Control"] == IMMUTABLE, path
        assert response.headers["ETag"] == f'"{sha256}"', path
        assert int(response.headers["Content-Length"]) == size == len(response.data), path
        assert hashlib.sha256(response.data).hexdigest() == sha256, path


def test_artifact_if_none_match_is_304(client, demo_manifest):
    record = demo_manifest["models"]["digits"]["variants"]["fp32"]
    response = client.get(f"/repository/{record['file']}", headers={"If-None-Match": f'"{record["sha256"]}"'})
    assert response.status_code == 304
    assert response.data == b""
    assert response.headers["ETag"] == f'"{record["sha256"]}"'


def test_artifact_range(client, demo_repository, demo_manifest):
    record = demo_manifest["models"]["minilm"]["variants"]["int8-dynamic"]
    response = client.get(f"/repository/{record['file']}", headers={"Range": "bytes=0-99"})
    assert response.status_code == 206
    assert response.headers["Content-Range"] == f"bytes 0-99/{record['bytes']}"
    assert response.headers["Content-Length"] == "100"
    assert response.data == (demo_repository / record["file"]).read_bytes()[:100]


def test_artifact_range_at_the_end(client, demo_repository, demo_manifest):
    record = demo_manifest["models"]["iris"]["variants"]["fp16"]
    response = client.get(f"/repository/{record['file']}", headers={"Range": "bytes=-10"})
    assert response.status_code == 206
    assert response.headers["Content-Range"] == f"bytes {record['bytes'] - 10}-{record['bytes'] - 1}/{record['bytes']}"
    assert response.data == (demo_repository / record["file"]).read_bytes()[-10:]


def test_artifact_head_has_the_exact_length(client, demo_manifest):
    record = demo_manifest["models"]["iris"]["variants"]["fp32"]
    response = client.head(f"/repository/{record['file']}")
    assert response.status_code == 200
    assert int(response.headers["Content-Length"]) == record["bytes"]
    assert response.data == b""


@pytest.mark.parametrize("model", MODELS)
def test_golden_data_files_are_served(client, demo_repository, demo_manifest, model):
    golden = demo_manifest["models"][model]["golden"]["path"]
    folder = demo_repository / golden / "test_data_set_0"
    names = sorted(p.name for p in folder.iterdir())
    assert "input_0.pb" in names
    for name in names:
        response = client.get(f"/repository/{golden}/test_data_set_0/{name}")
        assert response.status_code == 200, name
        assert response.data == (folder / name).read_bytes()
        assert response.headers["Cache-Control"] == IMMUTABLE


@pytest.mark.parametrize(
    "path",
    [
        "artifacts/" + "0" * 64 + ".onnx",
        "artifacts/" + "f" * 64 + ".json",
        "testdata/" + "0" * 64 + "/test_data_set_0/input_0.pb",
        "artifacts",
        "artifacts/",
        "testdata",
        ".lock",
    ],
)
def test_unknown_repository_path_is_a_json_404(client, assert_json_error, path):
    response = client.get(f"/repository/{path}")
    assert_json_error(response, 404)
    assert b"<html" not in response.data.lower()


def test_unknown_file_in_a_golden_folder_is_a_404(client, demo_manifest, assert_json_error):
    golden = demo_manifest["models"]["iris"]["golden"]["path"]
    assert_json_error(client.get(f"/repository/{golden}/test_data_set_0/input_9.pb"), 404, "input_9.pb")
    assert_json_error(client.get(f"/repository/{golden}"), 404)


def test_artifact_on_disk_but_not_in_the_manifest_is_a_404(repository_copy, assert_json_error):
    repository = repository_copy(["iris"])
    data = b"an artifact no manifest names"
    stray = f"artifacts/{hashlib.sha256(data).hexdigest()}.onnx"
    (repository / stray).write_bytes(data)
    client = client_of(create_app({"repository": repository}))
    response = client.get(f"/repository/{stray}")
    assert_json_error(response, 404)
    assert data not in response.data


# --------------------------------------------------------------------------- traversal

# Each of these names a file outside the folder its route serves; the test checks that the answer
# is the JSON 404 (which cannot carry the file: assert_json_error wants exactly {"error": ...}).
TRAVERSALS = [
    "/repository/../manifest.json",
    "/repository/%2e%2e/%2e%2e/etc/passwd",
    "/repository/artifacts/..%2f..%2fmanifest.json",
    "/web/../server/app.py",
    "/web/%2e%2e/pyproject.toml",
    "/web/..%2f..%2f..%2fetc/passwd",
    "/ort/..%2fpackage.json",
    "/ort/%2e%2e/%2e%2e/%2e%2e/package.json",
    "//etc/passwd",
    pytest.param("/web/%2fetc/passwd"),
    "/web/%5c..%5cserver%5capp.py",
    "/web/..%5c..%5cpyproject.toml",
    "/web/app/main.js%00.html",
    pytest.param("/web//etc/passwd"),
    pytest.param("/repository/testdata/{golden}/../../manifest.json"),
    pytest.param("/repository/testdata/{golden}/%2e%2e/%2e%2e/.lock"),
]


@pytest.mark.parametrize("raw_path", TRAVERSALS)
def test_traversal_is_a_json_404(client, demo_manifest, assert_json_error, raw_path):
    raw_path = raw_path.replace("{golden}", demo_manifest["models"]["iris"]["golden"]["sha256"])
    response = raw_get(client, raw_path)
    assert_json_error(response, 404)


def test_golden_folder_prefix_does_not_reach_unreferenced_artifacts(repository_copy, assert_json_error):
    repository = repository_copy(["iris"])
    manifest = json.loads((repository / "manifest.json").read_text())
    golden = manifest["models"]["iris"]["golden"]["path"]
    data = b"an artifact no manifest names"
    stray = f"artifacts/{hashlib.sha256(data).hexdigest()}.onnx"
    (repository / stray).write_bytes(data)
    client = client_of(create_app({"repository": repository}))
    response = raw_get(client, f"/repository/{golden}/../../{stray}")
    assert data not in response.data
    assert_json_error(response, 404)


def test_symlinks_out_of_the_web_root_are_404(demo_repository, tmp_path, assert_json_error):
    web = tmp_path / "web"
    shutil.copytree(PROJECT_ROOT / "web", web)
    (web / "leak.toml").symlink_to(PROJECT_ROOT / "pyproject.toml")
    (web / "project").symlink_to(PROJECT_ROOT, target_is_directory=True)
    (web / "inside.js").symlink_to(web / "app" / "main.js")  # a link that stays inside is fine
    client = client_of(create_app({"repository": demo_repository, "web_root": web}))

    assert client.get("/web/app/main.js").status_code == 200
    assert client.get("/web/inside.js").data == (web / "app" / "main.js").read_bytes()
    for path in ["/web/leak.toml", "/web/project/pyproject.toml", "/web/project/server/app.py"]:
        response = client.get(path)
        assert_json_error(response, 404)
        assert b"[project]" not in response.data and b"create_app" not in response.data


def test_symlink_to_an_outside_index_html_is_404(demo_repository, tmp_path, assert_json_error):
    web = tmp_path / "web"
    web.mkdir()
    outside = tmp_path / "secret.html"
    outside.write_text("<p>secret</p>")
    (web / "index.html").symlink_to(outside)
    client = client_of(create_app({"repository": demo_repository, "web_root": web}))
    response = client.get("/")
    assert_json_error(response, 404)
    assert b"secret" not in response.data


# --------------------------------------------------------------------------- web files


def test_index_is_html_with_isolation_and_csp(client):
    response = client.get("/")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    assert response.data == (PROJECT_ROOT / "web" / "index.html").read_bytes()
    assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert response.headers["Cross-Origin-Resource-Policy"] == "same-origin"
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "'wasm-unsafe-eval'" in csp
    assert "script-src 'self'" in csp


@pytest.mark.parametrize(
    "url, path, mimetype",
    [
        ("/web/app/main.js", PROJECT_ROOT / "web" / "app" / "main.js", "text/javascript"),
        ("/web/lib/index.js", PROJECT_ROOT / "web" / "lib" / "index.js", "text/javascript"),
        ("/web/style.css", PROJECT_ROOT / "web" / "style.css", "text/css"),
        ("/ort/ort.wasm.min.mjs", ORT_DIST / "ort.wasm.min.mjs", "text/javascript"),
        ("/ort/ort-wasm-simd-threaded.wasm", ORT_DIST / "ort-wasm-simd-threaded.wasm", "application/wasm"),
        ("/ort/ort-wasm-simd-threaded.mjs", ORT_DIST / "ort-wasm-simd-threaded.mjs", "text/javascript"),
    ],
)
def test_static_files(client, url, path, mimetype):
    assert path.is_file(), f"{path} is missing (npm ci)"
    response = client.get(url)
    assert response.status_code == 200
    assert response.mimetype == mimetype
    assert int(response.headers["Content-Length"]) == path.stat().st_size
    assert response.data == path.read_bytes()
    assert response.headers["Cross-Origin-Resource-Policy"] == "same-origin"
    assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_unknown_web_and_ort_files_are_json_404(client, assert_json_error):
    assert_json_error(client.get("/web/nope.js"), 404, "nope.js")
    assert_json_error(client.get("/ort/nope.wasm"), 404, "nope.wasm")
    assert_json_error(client.get("/nothing"), 404)


def test_json_errors_carry_the_isolation_headers_too(client):
    response = client.get("/repository/artifacts/" + "0" * 64 + ".onnx")
    assert response.headers["Cross-Origin-Resource-Policy"] == "same-origin"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
