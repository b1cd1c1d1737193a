"""Triton's model repository extension: the public index, and load/unload behind the admin_token setting."""

from __future__ import annotations

import gc
import json
import weakref
from urllib.parse import urlsplit

import pytest

from fixtures.cors import client_for
from onnxport.harness.process import free_port
from onnxport.serving import config
from onnxport.serving.config import ConfigError

pytestmark = pytest.mark.usefixtures("clean_environment")

TOKEN = "s3cret-operator-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
IRIS_REQUEST = {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}]}


@pytest.fixture
def admin_server(spawn_server, demo_repository):
    """A real `onnxport serve` on the demo repository with the admin token set through the environment."""
    port = free_port()
    return spawn_server(
        ["serve", "--repository", str(demo_repository), "--port", str(port)], port, env={"ONNXPORT_ADMIN_TOKEN": TOKEN}
    )


def triton_client(base_url: str):
    import tritonclient.http as httpclient

    return httpclient.InferenceServerClient(url=urlsplit(base_url).netloc)


def test_tritonclient_index_load_unload_with_the_token(admin_server, demo_manifest, tmp_path):
    triton = triton_client(admin_server)
    assert "model_repository" in triton.get_server_metadata()["extensions"]
    index = triton.get_model_repository_index()  # public: no token
    rows = {(row["name"], row["version"]): row for row in index}
    for name, entry in demo_manifest["models"].items():
        for version in entry["variants"]:
            assert set(rows[name, version]) == {"name", "version", "state", "reason"}
    assert rows["iris", "fp32"]["state"] == "UNAVAILABLE" and "not loaded" in rows["iris", "fp32"]["reason"]

    triton.load_model("iris", headers=AUTH)
    rows = {(r["name"], r["version"]): r for r in triton.get_model_repository_index()}
    assert rows["iris", "fp32"] == {"name": "iris", "version": "fp32", "state": "READY", "reason": ""}
    triton.unload_model("iris", headers=AUTH)
    rows = {(r["name"], r["version"]): r for r in triton.get_model_repository_index()}
    assert rows["iris", "fp32"]["state"] == "UNAVAILABLE"
    # Unloaded is not out of service: the next inference creates the session again.
    assert triton.is_model_ready("iris")
    log = "".join(p.read_text() for p in tmp_path.glob("server-*.log"))
    assert TOKEN not in log


def test_tritonclient_without_or_with_a_wrong_token_gets_401(admin_server):
    from tritonclient.utils import InferenceServerException

    triton = triton_client(admin_server)
    for headers in (None, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        with pytest.raises(InferenceServerException) as raised:
            triton.load_model("iris", headers=headers)
        assert raised.value.status() == "401" and "Authorization: Bearer" in raised.value.message()
        assert TOKEN not in raised.value.message()
        with pytest.raises(InferenceServerException) as raised:
            triton.unload_model("iris", headers=headers)
        assert raised.value.status() == "401"


def test_tritonclient_without_the_setting_gets_403(live_server):
    from tritonclient.utils import InferenceServerException

    triton = triton_client(live_server)
    assert triton.get_model_repository_index()
    for call in (triton.load_model, triton.unload_model):
        with pytest.raises(InferenceServerException) as raised:
            call("iris", headers=AUTH)
        assert raised.value.status() == "403" and "admin_token" in raised.value.message()


def test_unload_releases_the_session_and_infer_loads_it_again(demo_repository, demo_manifest, assert_json_error):
    client = client_for(repository=demo_repository, admin_token=TOKEN)
    state = client.application.extensions["onnxport"]
    record = demo_manifest["models"]["iris"]["variants"]["fp32"]
    assert client.post("/v2/repository/models/iris/load", headers=AUTH).status_code == 200
    assert record["sha256"] in state.sessions.loaded()
    session = weakref.ref(state.sessions.get(record["sha256"], demo_repository / record["file"], "iris fp32"))

    reply = client.post("/v2/repository/models/iris/unload", headers=AUTH, json={"parameters": {}})
    assert reply.status_code == 200 and reply.json == {}
    gc.collect()
    assert session() is None, "unload left a reference to the session"
    assert record["sha256"] not in state.sessions.loaded()

    reply = client.post("/v2/models/iris/infer", json=IRIS_REQUEST)
    assert reply.status_code == 200, reply.json
    assert record["sha256"] in state.sessions.loaded()


def test_unknown_model_and_no_token_are_json_errors(demo_repository, assert_json_error):
    client = client_for(repository=demo_repository, admin_token=TOKEN)
    assert_json_error(client.post("/v2/repository/models/resnet/load", headers=AUTH), 404, "unknown model 'resnet'")
    assert_json_error(client.post("/v2/repository/models/resnet/unload"), 401, "Authorization: Bearer")
    assert_json_error(client.get("/v2/repository/index"), 405, "POST")
    without = client_for(repository=demo_repository)
    assert_json_error(without.post("/v2/repository/models/iris/load", headers=AUTH), 403, "admin_token")


def test_the_setting_never_echoes_the_token():
    assert config.load({}, environ={})["admin_token"] is None
    assert config.load(None, environ={"ONNXPORT_ADMIN_TOKEN": "  "})["admin_token"] is None
    assert config.load(None, environ={"ONNXPORT_ADMIN_TOKEN": TOKEN})["admin_token"] == TOKEN
    with pytest.raises(ConfigError) as raised:
        config.load({"admin_token": 12345}, environ={})
    assert "12345" not in str(raised.value)


def test_the_openapi_document_lists_the_repository_routes(demo_repository):
    document = json.loads(client_for(repository=demo_repository).get("/v2/openapi.json").data)
    assert {"/v2/repository/index", "/v2/repository/models/{model_name}/load"} <= set(document["paths"])
