"""A new manifest (what a build commits by atomic rename) is picked up by a running app without a
restart, and the SessionPool lets go of the sessions of artifacts the new manifest no longer names."""

from __future__ import annotations

import json

import pytest

from onnxport.serving.app import create_app

IRIS = {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.9, 3.0, 5.1, 1.8]}]}
DIGITS = {"inputs": [{"name": "pixels", "shape": [1, 1, 8, 8], "datatype": "FP32", "data": [0.5] * 64}]}


def infer(client, model: str, version: str, body: dict):
    return client.post(
        f"/v2/models/{model}/versions/{version}/infer", data=json.dumps(body), content_type="application/json"
    )


def read_manifest(repository) -> dict:
    return json.loads((repository / "manifest.json").read_text())


@pytest.fixture
def iris_repository(repository_copy):
    """A copy holding iris and digits files, whose manifest names iris only."""
    return repository_copy(["iris"], keep_files_of=["digits"])


def test_a_removed_variant_is_no_longer_served_and_its_session_is_released(
    iris_repository,
    replace_manifest,
    assert_json_error,
):
    app = create_app({"repository": iris_repository})
    sessions = app.extensions["onnxport"].sessions
    client = app.test_client()
    manifest = read_manifest(iris_repository)
    variants = manifest["models"]["iris"]["variants"]
    fp32, fp16 = variants["fp32"]["sha256"], variants["fp16"]["sha256"]

    assert sessions.loaded() == []  # sessions are created on first use
    assert infer(client, "iris", "fp32", IRIS).status_code == 200
    assert infer(client, "iris", "fp16", IRIS).status_code == 200
    assert sessions.loaded() == sorted([fp32, fp16])
    etag = client.get("/api/manifest").headers["ETag"]

    del variants["fp16"]
    replace_manifest(iris_repository, manifest)

    # The next request sees the new manifest: no restart.
    assert client.get("/v2/models/iris").json["versions"] == ["fp32"]
    assert sessions.loaded() == [fp32], "the fp16 session must be released, the fp32 one kept"
    assert_json_error(infer(client, "iris", "fp16", IRIS), 404, "'fp16'", "'iris'")
    assert_json_error(client.get("/v2/models/iris/versions/fp16/ready"), 404, "'fp16'")
    assert infer(client, "iris", "fp32", IRIS).status_code == 200
    assert sessions.loaded() == [fp32]

    # The manifest endpoint and the artifact URLs follow the new manifest too.
    response = client.get("/api/manifest", headers={"If-None-Match": etag})
    assert response.status_code == 200 and response.headers["ETag"] != etag
    assert "fp16" not in response.json["models"]["iris"]["variants"]
    with client.get(f"/repository/{variants['fp32']['file']}") as kept:
        assert kept.status_code == 200
    assert_json_error(client.get(f"/repository/artifacts/{fp16}.onnx"), 404)


def test_a_removed_model_releases_all_its_sessions(iris_repository, replace_manifest, assert_json_error):
    app = create_app({"repository": iris_repository})
    sessions = app.extensions["onnxport"].sessions
    client = app.test_client()
    for version in ["fp32", "fp16"]:
        assert infer(client, "iris", version, IRIS).status_code == 200
    assert len(sessions.loaded()) == 2

    manifest = read_manifest(iris_repository)
    manifest["models"] = {}
    replace_manifest(iris_repository, manifest)

    assert client.get("/v2/health/ready").status_code == 503
    assert sessions.loaded() == []
    assert_json_error(infer(client, "iris", "fp32", IRIS), 404, "'iris'")


def test_a_new_model_is_served_without_a_restart(demo_repository, iris_repository, replace_manifest, assert_json_error):
    app = create_app({"repository": iris_repository})
    client = app.test_client()
    assert_json_error(infer(client, "digits", "fp32", DIGITS), 404, "'digits'", "iris")
    assert infer(client, "iris", "fp32", IRIS).status_code == 200

    replace_manifest(
        iris_repository,
        read_manifest(demo_repository)
        | {
            "models": {
                name: entry
                for name, entry in read_manifest(demo_repository)["models"].items()
                if name in ("iris", "digits")
            }
        },
    )

    assert client.get("/v2/models/digits").json["versions"][0] == "fp32"
    response = infer(client, "digits", "int8-static", DIGITS)
    assert response.status_code == 200, response.data
    assert response.json["outputs"][0]["shape"] == [1, 10]
    sessions = app.extensions["onnxport"].sessions.loaded()
    assert read_manifest(iris_repository)["models"]["digits"]["variants"]["int8-static"]["sha256"] in sessions


def test_a_replaced_artifact_gets_a_new_session(iris_repository, replace_manifest):
    """A variant whose record now names another artifact (a rebuild) runs the new file."""
    app = create_app({"repository": iris_repository})
    sessions = app.extensions["onnxport"].sessions
    client = app.test_client()
    manifest = read_manifest(iris_repository)
    variants = manifest["models"]["iris"]["variants"]
    old, new = variants["fp16"], variants["fp32"]
    assert infer(client, "iris", "fp16", IRIS).status_code == 200
    assert sessions.loaded() == [old["sha256"]]

    variants["fp16"] = dict(new)  # same name, other artifact
    replace_manifest(iris_repository, manifest)

    first = infer(client, "iris", "fp16", IRIS)
    assert first.status_code == 200
    assert sessions.loaded() == [new["sha256"]]
