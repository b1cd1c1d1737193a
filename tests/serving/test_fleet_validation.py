"""POST /api/fleet/reports refuses what is not a report with a 4xx naming the field (docs/reference/fleet.md), and a
report of a file this server does not serve, or that names it otherwise than its manifest does, with a 422."""

from __future__ import annotations

import copy
import json
import time

import pytest

from fixtures.fleet import report, result, served_double
from fixtures.servers import buffered_client
from onnxport.serving.app import create_app

SHA = "0123456789abcdef" * 4  # the sha256 of no file served here
DEVICE = {
    "engine": "Chrome",
    "engine_major": 131,
    "adapter_vendor": "google",
    "adapter_architecture": "swiftshader",
    "software_adapter": True,
    "cores": "2",
}
TOKEN = "AbCdEfGhIjKlMnOpQrStUv"
GOOD: dict = {}  # a report of the served file: made by the `served` fixture


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A repository serving one model, `double` (imported once for the module): (root, its fp32 file's sha256)."""
    root, sha256 = served_double(tmp_path_factory.mktemp("served"))
    GOOD.update(report(TOKEN, DEVICE, [result(sha256, "double", "fp32", "wasm", "pass", 1.5, 0.999)]))
    return root, sha256


@pytest.fixture
def client(tmp_path, served):
    def make(**settings):
        return buffered_client(
            create_app(
                {"repository": served[0], "fleet_db": tmp_path / "fleet.sqlite3", "request_log": "off", **settings}
            )
        )

    return make


def changed(path: str, value) -> dict:
    """GOOD with the field at dotted `path` set to value (or removed, for the value REMOVE)."""
    body = copy.deepcopy(GOOD)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = body
    for part in parents:
        node = node[part]
    if value is REMOVE:
        del node[last]
    else:
        node[last] = value
    return body


REMOVE = object()
BAD = [
    ("schema", 2),
    ("schema", "1"),
    ("client", "short"),
    ("client", "x" * 65),
    ("client", "has space in it 12345678"),
    ("client", 12345678901234567890123),
    ("client", REMOVE),
    ("device", None),
    ("device.engine", "Chromium"),
    ("device.engine_major", "131"),
    ("device.engine_major", -1),
    ("device.engine_major", 1.5),
    ("device.adapter_vendor", "v" * 65),
    ("device.adapter_vendor", None),
    ("device.adapter_vendor", "bad\nline"),
    ("device.adapter_architecture", 3),
    ("device.software_adapter", "true"),
    ("device.software_adapter", 1),
    ("device.cores", 2),
    ("device.cores", "3"),
    ("device.extra", 1),
    ("results", []),
    ("results", {}),
    ("results.0.model", ""),
    ("results.0.model", "m" * 129),
    ("results.0.variant", "v" * 33),
    ("results.0.form", ""),
    ("results.0.form", "f" * 33),
    ("results.0.sha256", SHA.upper()),
    ("results.0.sha256", SHA[:63]),
    ("results.0.runtime", "WebGPU"),
    ("results.0.runtime", "r" * 33),
    ("results.0.threads", 0),
    ("results.0.threads", 65),
    ("results.0.threads", 2.0),
    ("results.0.verdict", "ok"),
    ("results.0.metric", 0.5),
    ("results.0.metric.name", ""),
    ("results.0.metric.value", "0.5"),
    ("results.0.metric.limit", True),
    ("results.0.metric.extra", 1),
    ("results.0.create_ms", -1),
    ("results.0.first_run_ms", 3_600_000),
    ("results.0.warm_run_ms", "1"),
    ("results.0.warm_run_ms", REMOVE),
    ("results.0.extra", None),
    ("extra", 1),
]


@pytest.mark.parametrize(
    ("path", "value"), BAD, ids=[f"{p}=removed" if v is REMOVE else f"{p}={v!r}"[:50] for p, v in BAD]
)
def test_every_bad_field_is_a_422_naming_it(client, path, value):
    answer = client().post("/api/fleet/reports", json=changed(path, value))
    assert answer.status_code == 422, answer.get_json()
    error = answer.get_json()["error"]
    assert f"field '{path.replace('.0.', '[0].')}" in error, error
    if path == "client" and isinstance(value, str):
        assert value not in error, "the token is never echoed (the request log would keep it)"


def test_a_good_report_is_accepted_and_its_strings_normalized(client):
    body = changed("device.adapter_vendor", "  Google  ")
    app = client()
    assert app.post("/api/fleet/reports", json=body).get_json() == {"accepted": 1}
    group = app.get("/api/fleet").get_json()["groups"][0]
    assert group["class"]["adapter_vendor"] == "google"
    assert (group["class_key"], group["verdict"], group["clients"]) == (
        "Chrome 131 · 2 cores · google swiftshader (software)",
        "few",
        1,
    )


def test_an_unknown_field_is_told_the_allowed_ones_as_written(client):
    error = client().post("/api/fleet/reports", json=changed("extra", 1)).get_json()["error"]
    assert error == "field 'extra': unknown field; allowed here: schema, client, device, results"


def test_more_than_8_results_are_refused(client):
    body = copy.deepcopy(GOOD)
    body["results"] = body["results"] * 9
    answer = client().post("/api/fleet/reports", json=body)
    assert answer.status_code == 422
    assert "field 'results'" in answer.get_json()["error"] and "at most 8" in answer.get_json()["error"]


def test_a_body_over_16_kib_is_a_413_before_it_is_read(client):
    body = json.dumps(GOOD) + " " * 16 * 1024
    answer = client().post("/api/fleet/reports", data=body, content_type="application/json")
    assert answer.status_code == 413
    assert "16384 bytes" in answer.get_json()["error"]


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (json.dumps(GOOD), "text/plain", 415),
        (json.dumps(GOOD), "application/x-www-form-urlencoded", 415),
        ("{not json", "application/json", 400),
        ('{"schema": NaN}', "application/json", 400),
        (b"\xff\xfe", "application/json", 400),
        ("[" * 16_000, "application/json", 400),
        ('{"schema": 1, "device": ' + "[" * 16_000, "application/json", 400),
        ("[1, 2]", "application/json", 422),
    ],
)
def test_what_is_not_a_json_report_is_refused(client, body, content_type, status):
    answer = client().post("/api/fleet/reports", data=body, content_type=content_type)
    assert answer.status_code == status, answer.get_json()
    assert answer.get_json()["error"]


def test_reports_off_refuses_reports_and_publishes_no_fleet(client):
    app = client(fleet_reports="false")
    answer = app.post("/api/fleet/reports", json=GOOD)
    assert answer.status_code == 404
    assert "fleet_reports" in answer.get_json()["error"]
    # Every page's plan reads the fleet: no fleet is a 204, not an error in each page's console.
    answer = app.get("/api/fleet")
    assert (answer.status_code, answer.data, answer.headers["X-Onnxport-Fleet"]) == (204, b"", "off")


def test_a_page_of_another_origin_may_not_report(client):
    answer = client().post("/api/fleet/reports", json=GOOD, headers={"Origin": "https://evil.example"})
    assert answer.status_code == 403


def test_a_client_over_its_rate_gets_429_with_retry_after_then_recovers(client):
    app = client(fleet_client_rate="60")  # a burst of 60, then one a second
    answers = [app.post("/api/fleet/reports", json=GOOD).status_code for _ in range(61)]
    assert answers == [202] * 60 + [429]
    refused = app.post("/api/fleet/reports", json=GOOD)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    assert "this client" in refused.get_json()["error"]
    other = changed("client", "Z" * 22)
    assert app.post("/api/fleet/reports", json=other).status_code == 202, "another client is not held back"
    time.sleep(1.1)
    assert app.post("/api/fleet/reports", json=GOOD).status_code == 202


def test_an_address_over_its_rate_gets_429(client):
    app = client(fleet_address_rate="5")
    answers = [app.post("/api/fleet/reports", json=changed("client", f"{i:022d}")).status_code for i in range(6)]
    assert answers == [202] * 5 + [429]


def test_the_published_fleet_is_revalidated_with_an_etag(client):
    app = client()
    app.post("/api/fleet/reports", json=GOOD)
    first = app.get("/api/fleet")
    assert first.headers["Cache-Control"] == "no-cache" and first.headers["ETag"]
    assert app.get("/api/fleet", headers={"If-None-Match": first.headers["ETag"]}).status_code == 304
    app.post("/api/fleet/reports", json=changed("client", "Y" * 22))
    assert app.get("/api/fleet", headers={"If-None-Match": first.headers["ETag"]}).status_code == 200


def test_a_report_of_a_file_this_server_does_not_serve_is_a_422_naming_it(client):
    app = client()
    answer = app.post("/api/fleet/reports", json=changed("results.0.sha256", SHA))
    assert answer.status_code == 422
    assert answer.get_json() == {
        "error": f"field 'results[0].sha256': {SHA} is not a file this server serves (see /api/manifest)"
    }
    assert app.get("/api/fleet").get_json()["groups"] == [], "nothing was folded"


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("results.0.model", "x" * 128, "the result says model 'xxx"),
        ("results.0.variant", "fp16", "variant 'fp16'"),
        ("results.0.form", "ort", "form 'ort'"),
    ],
)
def test_a_served_file_named_otherwise_than_the_manifest_does_is_a_422(client, served, path, value, said):
    """The model, variant and form of a result are the manifest's: a report cannot choose the labels of a group."""
    answer = client().post("/api/fleet/reports", json=changed(path, value))
    assert answer.status_code == 422
    error = answer.get_json()["error"]
    assert error.startswith(
        f"field 'results[0]': file {served[1]} is model 'double', variant 'fp32', form none "
        "on this server; the result says "
    ), error
    assert said in error


def test_a_runtime_that_is_no_browser_runtime_is_a_422(client, served):
    answer = client().post("/api/fleet/reports", json=changed("results.0.runtime", "my-own-runtime"))
    assert answer.status_code == 422
    assert answer.get_json()["error"] == (
        f"field 'results[0].runtime': 'my-own-runtime' is not a browser runtime of "
        f"file {served[1]}; expected one of webgpu, webnn, wasm, wasm-1t"
    )


def test_one_bad_result_refuses_the_whole_report(client, served):
    body = copy.deepcopy(GOOD)
    body["results"].append({**body["results"][0], "sha256": SHA, "runtime": "webgpu"})
    app = client()
    answer = app.post("/api/fleet/reports", json=body)
    assert answer.status_code == 422 and "results[1].sha256" in answer.get_json()["error"]
    assert app.get("/api/fleet").get_json()["groups"] == []
