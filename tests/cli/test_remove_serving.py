"""`onnxport remove` under a running server: the next request answers 404 in the V2 error shape, the
removed model's sessions are released (gone from the pool and garbage-collected), the others serve on;
and a hand-edited manifest's bad name is not served at all."""

from __future__ import annotations

import gc
import json
import urllib.error
import urllib.request
import weakref
from dataclasses import dataclass

import pytest

from fixtures.servers import buffered_client
from name_models import manifest_of, matmul_file, rename_by_hand
from onnxport.repository.names import RULE
from onnxport.serving.app import create_app

BODY = json.dumps({"inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32", "data": [0.5] * 8}]})


@dataclass
class Reply:
    status_code: int
    headers: object
    data: bytes


def post(base_url: str, path: str) -> Reply:
    """One V2 request to a real server; any status returned rather than raised."""
    request = urllib.request.Request(
        base_url + path, data=BODY.encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return Reply(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        with error:
            return Reply(error.code, error.headers, error.read())


@pytest.fixture
def repository(tmp_path, run_cli):
    """Models `a` and `b`, two different files (fp32 only)."""
    root = tmp_path / "repository"
    for seed, name in enumerate(["a", "b"]):
        code, _, err = run_cli(
            "--repository",
            root,
            "import",
            matmul_file(tmp_path / "models", seed),
            "--name",
            name,
            "--quiet",
            "--forms",
            "none",
        )
        assert code == 0, err
    return root


def fp32_sha(repository, model: str) -> str:
    return manifest_of(repository)["models"][model]["variants"]["fp32"]["sha256"]


def test_remove_releases_the_models_sessions_in_a_running_app(run_cli, assert_json_error, repository):
    app = create_app({"repository": repository})
    sessions = app.extensions["onnxport"].sessions
    client = buffered_client(app)
    a, b = fp32_sha(repository, "a"), fp32_sha(repository, "b")
    for model in ("a", "b"):
        assert client.post(f"/v2/models/{model}/infer", data=BODY, content_type="application/json").status_code == 200
    assert sessions.loaded() == sorted([a, b])
    fp32_file = manifest_of(repository)["models"]["a"]["variants"]["fp32"]["file"]
    released = weakref.ref(sessions.get(a, repository / fp32_file, "a"))

    code, out, err = run_cli("--repository", repository, "remove", "a")
    assert code == 0, err

    # The next request sees the new manifest: a is unknown, its session is gone, b's is kept.
    assert_json_error(client.post("/v2/models/a/infer", data=BODY, content_type="application/json"), 404, "'a'", "b")
    assert sessions.loaded() == [b]
    gc.collect()
    assert released() is None, "the removed model's session is still referenced somewhere"
    assert client.post("/v2/models/b/infer", data=BODY, content_type="application/json").status_code == 200


def test_remove_under_a_real_server(run_cli, assert_json_error, serve_repository, repository):
    base_url = serve_repository(repository)
    for model in ("a", "b"):
        assert post(base_url, f"/v2/models/{model}/versions/fp32/infer").status_code == 200

    assert run_cli("--repository", repository, "remove", "a")[0] == 0

    assert_json_error(post(base_url, "/v2/models/a/versions/fp32/infer"), 404, "unknown model 'a'", "b")
    assert_json_error(post(base_url, "/v2/models/a/infer"), 404, "'a'")
    reply = post(base_url, "/v2/models/b/infer")
    assert reply.status_code == 200, reply.data
    assert json.loads(reply.data)["outputs"][0]["shape"] == [1, 4]
    with urllib.request.urlopen(base_url + "/api/manifest", timeout=60) as response:
        assert sorted(json.loads(response.read())["models"]) == ["b"]


@pytest.mark.parametrize("bad", ["Bad.Name", "../a"])
def test_a_hand_edited_bad_name_is_not_served(assert_json_error, repository, bad):
    rename_by_hand(repository, "a", bad)
    app = create_app({"repository": repository})
    client = buffered_client(app)
    assert sorted(client.get("/api/manifest").json["models"]) == ["b"]
    assert app.extensions["onnxport"].sessions.loaded() == []
    assert client.post("/v2/models/b/infer", data=BODY, content_type="application/json").status_code == 200
    if "/" not in bad:  # a name that is a URL segment: the 404 says why it is not served
        for response in (
            client.get(f"/v2/models/{bad}"),
            client.post(f"/v2/models/{bad}/infer", data=BODY, content_type="application/json"),
        ):
            assert_json_error(response, 404, repr(bad), "name rule", RULE, "onnxport remove")
    assert app.extensions["onnxport"].sessions.loaded() == [fp32_sha(repository, "b")]
