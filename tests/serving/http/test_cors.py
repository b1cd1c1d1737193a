"""CORS (serving/http/cors.py): an allowed origin gets the headers on every shared path, errors included, and
others and no Origin do not; preflights, what an allowed origin may ask for (methods, headers) and the 403 naming
what is not allowed; the cors_origins setting, from the environment, a JSON file or create_app's mapping, whose
errors name bad entries."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from fixtures.cors import ALLOWED, DENIED, OTHER_ALLOWED, client_for
from onnxport.serving import config
from onnxport.serving.app import create_app
from onnxport.serving.config import ConfigError

pytestmark = pytest.mark.usefixtures("clean_environment")

PROJECT_ROOT = Path(__file__).resolve().parents[3]
ORT_DIST = PROJECT_ROOT / "node_modules" / "onnxruntime-web" / "dist"
TOKENIZERS_DIST = PROJECT_ROOT / "node_modules" / "@huggingface" / "tokenizers" / "dist"
CHARTJS_DIST = PROJECT_ROOT / "node_modules" / "chart.js" / "dist"
EXPOSED = ["Content-Length", "Content-Range", "Accept-Ranges", "ETag", "Inference-Header-Content-Length", "Retry-After"]
CORS_HEADERS = [
    "Access-Control-Allow-Origin",
    "Access-Control-Expose-Headers",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Headers",
    "Access-Control-Max-Age",
    "Access-Control-Allow-Credentials",
]
IRIS_REQUEST = {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}]}


@pytest.fixture(scope="module")
def web_root(cors_web_root) -> Path:
    return cors_web_root


@pytest.fixture(scope="module")
def client(cors_client) -> FlaskClient:
    return cors_client


@pytest.fixture(scope="module")
def artifact(iris_fp32_artifact) -> dict:
    return iris_fp32_artifact


def assert_cors(response, origin: str = ALLOWED) -> None:
    headers = response.headers
    assert headers["Access-Control-Allow-Origin"] == origin  # echoed, never *
    assert "Origin" in response.vary
    assert [h.strip() for h in headers["Access-Control-Expose-Headers"].split(",")] == EXPOSED
    assert headers["Cross-Origin-Resource-Policy"] == "cross-origin"
    assert "Access-Control-Allow-Credentials" not in headers
    # Cross-origin use does not weaken our own isolation.
    assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"


def assert_no_cors(response, corp: str = "same-origin") -> None:
    for name in CORS_HEADERS:
        assert name not in response.headers, f"{name}: {response.headers[name]}"
    assert response.headers["Cross-Origin-Resource-Policy"] == corp


# --------------------------------------------------------------------------- an allowed origin


def test_manifest(client, demo_manifest):
    response = client.get("/api/manifest", headers={"Origin": ALLOWED})
    assert response.status_code == 200
    assert response.json == demo_manifest
    assert_cors(response)


def test_the_manifest_304_carries_them_too(client):
    etag = client.get("/api/manifest").headers["ETag"]
    response = client.get("/api/manifest", headers={"Origin": OTHER_ALLOWED, "If-None-Match": etag})
    assert response.status_code == 304
    assert_cors(response, OTHER_ALLOWED)


def test_artifact_whole_ranged_and_revalidated(client, demo_repository, artifact):
    url = f"/repository/{artifact['file']}"
    whole = client.get(url, headers={"Origin": ALLOWED})
    assert whole.status_code == 200
    assert hashlib.sha256(whole.data).hexdigest() == artifact["sha256"]
    assert_cors(whole)

    ranged = client.get(url, headers={"Origin": ALLOWED, "Range": "bytes=0-9"})
    assert ranged.status_code == 206
    assert ranged.headers["Content-Range"] == f"bytes 0-9/{artifact['bytes']}"
    assert ranged.data == (demo_repository / artifact["file"]).read_bytes()[:10]
    assert_cors(ranged)

    cached = client.get(url, headers={"Origin": ALLOWED, "If-None-Match": f'"{artifact["sha256"]}"'})
    assert cached.status_code == 304
    assert_cors(cached)


def test_golden_data(client, demo_manifest):
    assert_cors(client.get("/api/models/iris/golden", headers={"Origin": ALLOWED}))
    golden = demo_manifest["models"]["iris"]["golden"]["path"]
    response = client.get(f"/repository/{golden}/test_data_set_0/input_0.pb", headers={"Origin": ALLOWED})
    assert response.status_code == 200
    assert_cors(response)


@pytest.mark.parametrize(
    "url, path",
    [
        ("/ort/ort.wasm.min.mjs", ORT_DIST / "ort.wasm.min.mjs"),
        ("/ort/ort-wasm-simd-threaded.wasm", ORT_DIST / "ort-wasm-simd-threaded.wasm"),
        ("/vendor/tokenizers/tokenizers.min.mjs", TOKENIZERS_DIST / "tokenizers.min.mjs"),
        ("/vendor/chartjs/chart.umd.min.js", CHARTJS_DIST / "chart.umd.min.js"),
    ],
)
def test_vendored_files(client, url, path):
    assert path.is_file(), f"{path} is missing (npm ci)"
    response = client.get(url, headers={"Origin": ALLOWED})
    assert response.status_code == 200
    assert response.data == path.read_bytes()
    assert_cors(response)


def test_web_library_file_can_be_imported_elsewhere(client, web_root):
    response = client.get("/web/lib/manifest.js", headers={"Origin": ALLOWED})
    assert response.status_code == 200
    assert response.mimetype == "text/javascript"
    assert response.data == (web_root / "lib" / "manifest.js").read_bytes()
    assert_cors(response)


def test_v2_metadata_and_json_inference(client):
    assert_cors(client.get("/v2", headers={"Origin": ALLOWED}))
    assert_cors(client.get("/v2/models/iris", headers={"Origin": ALLOWED}))
    response = client.post(
        "/v2/models/iris/infer",
        data=json.dumps(IRIS_REQUEST),
        content_type="application/json",
        headers={"Origin": ALLOWED},
    )
    assert response.status_code == 200
    assert [o["name"] for o in response.json["outputs"]] == ["label", "probabilities"]
    assert_cors(response)


def test_v2_binary_inference_exposes_the_header_length(client):
    body = {**IRIS_REQUEST, "parameters": {"binary_data_output": True}}
    response = client.post(
        "/v2/models/iris/infer", data=json.dumps(body), content_type="application/json", headers={"Origin": ALLOWED}
    )
    assert response.status_code == 200
    assert int(response.headers["Inference-Header-Content-Length"]) < len(response.data)
    assert_cors(response)


@pytest.mark.parametrize(
    "method, url, status",
    [
        ("GET", "/repository/artifacts/" + "0" * 64 + ".onnx", 404),
        ("GET", "/api/models/nope/golden", 404),
        ("GET", "/web/nope.js", 404),
        ("GET", "/ort/nope.wasm", 404),
        ("POST", "/v2/models/nope/infer", 404),
        ("GET", "/v2/models/iris/infer", 405),
    ],
)
def test_errors_are_readable_by_the_allowed_page(client, assert_json_error, method, url, status):
    response = client.open(
        url, method=method, data=json.dumps(IRIS_REQUEST), content_type="application/json", headers={"Origin": ALLOWED}
    )
    assert_json_error(response, status)
    assert_cors(response)


def test_a_bad_inference_request_is_readable_too(client, assert_json_error):
    response = client.post(
        "/v2/models/iris/infer", data="{not json", content_type="application/json", headers={"Origin": ALLOWED}
    )
    assert_json_error(response, 400)
    assert_cors(response)


@pytest.mark.parametrize("url", ["/", "/conformance", "/nothing"])
def test_our_own_pages_are_not_shared(client, url):
    """Only the data and code another page needs is cross-origin; the app's pages stay ours."""
    response = client.get(url, headers={"Origin": ALLOWED})
    assert_no_cors(response)


# --------------------------------------------------------------------------- origins not allowed


@pytest.mark.parametrize("headers", [{"Origin": DENIED}, {}], ids=["other origin", "no origin"])
@pytest.mark.parametrize(
    "url",
    [
        "/api/manifest",
        "/api/models/iris/golden",
        "/ort/ort.wasm.min.mjs",
        "/web/lib/manifest.js",
        "/v2/models/iris",
        "/web/nope.js",
    ],
)
def test_everyone_else_gets_the_same_origin_answer(client, headers, url):
    response = client.get(url, headers=headers)
    assert_no_cors(response)
    assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"


@pytest.mark.parametrize("headers", [{"Origin": DENIED}, {}], ids=["other origin", "no origin"])
def test_artifacts_are_embeddable_everywhere_once_cors_is_on(client, artifact, headers):
    """A CDN keeps one copy of an artifact for every origin: CORP must suit all of them."""
    response = client.get(f"/repository/{artifact['file']}", headers=headers)
    assert response.status_code == 200
    assert_no_cors(response, corp="cross-origin")
    assert "Origin" in response.vary


def test_an_inference_from_an_origin_not_allowed_is_refused_before_it_runs(client):
    response = client.post(
        "/v2/models/iris/infer",
        data=json.dumps(IRIS_REQUEST),
        content_type="application/json",
        headers={"Origin": DENIED},
    )
    assert response.status_code == 403  # a page elsewhere must not make the server work; curl sends no Origin
    assert DENIED in response.get_json()["error"]
    assert_no_cors(response)


def test_without_the_setting_nothing_changes(demo_repository, artifact):
    client = client_for(repository=demo_repository)
    for url in ["/api/manifest", f"/repository/{artifact['file']}", "/ort/ort.wasm.min.mjs", "/v2/models/iris"]:
        response = client.get(url, headers={"Origin": ALLOWED})
        assert_no_cors(response)
        assert "Origin" not in response.vary, url


# --------------------------------------------------------------------------- any origin


def test_any_origin_echoes_the_origin(demo_repository, artifact):
    client = client_for(repository=demo_repository, cors_origins="*")
    for origin in ["https://anywhere.example", "http://127.0.0.1:9999"]:
        assert_cors(client.get(f"/repository/{artifact['file']}", headers={"Origin": origin}), origin)
        assert_cors(client.get("/api/manifest", headers={"Origin": origin}), origin)
        preflight = client.options(
            "/v2/models/iris/infer",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        assert preflight.status_code == 204
        assert preflight.headers["Access-Control-Allow-Origin"] == origin
    assert_no_cors(client.get("/api/manifest"))  # no Origin: a same-origin or non-browser request


def test_an_origin_matches_case_insensitively_and_without_its_default_port(demo_repository):
    client = client_for(repository=demo_repository, cors_origins=["HTTPS://App.Example:443"])
    assert_cors(client.get("/api/manifest", headers={"Origin": "https://app.example"}), "https://app.example")
    assert_no_cors(client.get("/api/manifest", headers={"Origin": "https://app.example:8443"}))
    assert_no_cors(client.get("/api/manifest", headers={"Origin": "http://app.example"}))


# Preflights


def test_preflight_of_a_binary_inference(client):
    response = client.options(
        "/v2/models/iris/infer",
        headers={
            "Origin": ALLOWED,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,inference-header-content-length",
        },
    )
    assert response.status_code == 204
    assert response.data == b"" and "Content-Type" not in response.headers
    assert response.headers["Access-Control-Allow-Origin"] == ALLOWED
    methods = [m.strip() for m in response.headers["Access-Control-Allow-Methods"].split(",")]
    assert methods == ["GET", "HEAD", "POST", "OPTIONS"]
    assert response.headers["Access-Control-Allow-Headers"] == "content-type,inference-header-content-length"
    assert response.headers["Access-Control-Max-Age"] == "600"
    assert "Origin" in response.vary


@pytest.mark.parametrize("asked", ["range", "If-None-Match, Accept-Encoding", "Content-Encoding,Content-Type", ""])
def test_preflight_of_an_artifact_download(client, artifact, asked):
    headers = {"Origin": OTHER_ALLOWED, "Access-Control-Request-Method": "GET"}
    if asked:
        headers["Access-Control-Request-Headers"] = asked
    response = client.options(f"/repository/{artifact['file']}", headers=headers)
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == OTHER_ALLOWED
    assert response.headers.get("Access-Control-Allow-Headers") == (asked or None)


def test_preflight_from_an_origin_not_allowed(client, assert_json_error):
    response = client.options(
        "/v2/models/iris/infer",
        headers={
            "Origin": DENIED,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    message = assert_json_error(
        response, 403, f"origin {DENIED} is not allowed", "cors_origins", ALLOWED, OTHER_ALLOWED
    )
    assert message == f"origin {DENIED} is not allowed (setting cors_origins: {OTHER_ALLOWED}, {ALLOWED})"
    assert "Access-Control-Allow-Origin" not in response.headers


def test_preflight_asking_for_a_header_not_allowed(client, assert_json_error):
    response = client.options(
        "/v2/models/iris/infer",
        headers={
            "Origin": ALLOWED,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-api-key",
        },
    )
    assert_json_error(response, 403, "x-api-key", "Content-Type", "Inference-Header-Content-Length", "Range")
    assert "Access-Control-Allow-Origin" not in response.headers


def test_preflight_asking_for_a_method_not_allowed(client, assert_json_error):
    response = client.options("/api/manifest", headers={"Origin": ALLOWED, "Access-Control-Request-Method": "DELETE"})
    assert_json_error(response, 403, "DELETE", "GET, HEAD, POST, OPTIONS")


def test_preflight_without_cors_origins_says_so(demo_repository, assert_json_error):
    response = client_for(repository=demo_repository).options(
        "/v2/models/iris/infer", headers={"Origin": ALLOWED, "Access-Control-Request-Method": "POST"}
    )
    assert_json_error(response, 403, f"origin {ALLOWED} is not allowed (setting cors_origins: none)")


# The cors_origins setting


def test_default_is_no_origin():
    assert config.load({}, environ={})["cors_origins"] == []


def test_from_the_environment_comma_separated():
    loaded = config.load(None, environ={"ONNXPORT_CORS_ORIGINS": f" {ALLOWED} ,{OTHER_ALLOWED},, "})
    assert loaded["cors_origins"] == [ALLOWED, OTHER_ALLOWED]
    assert config.load(None, environ={"ONNXPORT_CORS_ORIGINS": ""})["cors_origins"] == []
    assert config.load(None, environ={"ONNXPORT_CORS_ORIGINS": "*"})["cors_origins"] == ["*"]


def test_from_a_json_file_as_a_list_or_a_string(tmp_path):
    path = tmp_path / "onnxport.json"
    path.write_text(json.dumps({"cors_origins": [ALLOWED, "http://[::1]:8080"]}))
    assert config.load(None, environ={"ONNXPORT_CONFIG": str(path)})["cors_origins"] == [ALLOWED, "http://[::1]:8080"]
    path.write_text(json.dumps({"cors_origins": f"{ALLOWED},{OTHER_ALLOWED}"}))
    assert config.load(None, environ={"ONNXPORT_CONFIG": str(path)})["cors_origins"] == [ALLOWED, OTHER_ALLOWED]


def test_from_the_create_app_mapping(tmp_path):
    assert config.load({"cors_origins": [OTHER_ALLOWED]}, environ={})["cors_origins"] == [OTHER_ALLOWED]
    assert config.load({"cors_origins": f"{ALLOWED}"}, environ={})["cors_origins"] == [ALLOWED]
    assert config.load({"cors_origins": ("http://LOCALHOST:80",)}, environ={})["cors_origins"] == ["http://localhost"]


@pytest.mark.parametrize(
    "entry",
    [
        "app.example",  # no scheme
        "https://app.example/",  # a path, even an empty one, is not part of an origin
        "https://app.example/lib",
        "https://app.example:99999",
        "https://app.example:0",
        "https://user@app.example",
        "https://*.example",
        "//app.example",
        "null",
    ],
)
def test_a_bad_origin_is_named(entry):
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CORS_ORIGINS": f"{ALLOWED},{entry}"})
    message = str(raised.value)
    assert "$ONNXPORT_CORS_ORIGINS" in message and "cors_origins" in message
    assert f"{entry!r} is not an origin" in message
    assert "scheme://host[:port]" in message and "*" in message


def test_a_bad_origin_in_the_file_names_the_file(tmp_path):
    path = tmp_path / "onnxport.json"
    path.write_text(json.dumps({"cors_origins": [ALLOWED, "app.example"]}))
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    assert str(path) in str(raised.value) and "'app.example' is not an origin" in str(raised.value)


@pytest.mark.parametrize("value", [5, {"origin": ALLOWED}, [ALLOWED, 5]])
def test_a_value_that_is_no_list_of_origins(tmp_path, value):
    path = tmp_path / "onnxport.json"
    path.write_text(json.dumps({"cors_origins": value}))
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    assert str(path) in str(raised.value) and "expected a list of origins" in str(raised.value)


def test_a_bad_origin_in_the_mapping_fails_create_app(tmp_path):
    with pytest.raises(ConfigError) as raised:
        create_app({"repository": str(tmp_path), "cors_origins": ["https://app.example/"]})
    message = str(raised.value)
    assert "setting cors_origins" in message and "'https://app.example/' is not an origin" in message


def test_the_setting_is_documented():
    setting = next(s for s in config.SETTINGS if s.name == "cors_origins")
    assert "scheme://host[:port]" in setting.help and "*" in setting.help
