"""The one tolerance table of `onnxport check` (server/onnxport/accuracy/browser_tolerances.py), its overrides file and
GET /api/tolerances, which is where the browser's conformance page reads it from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onnxport.accuracy import browser_tolerances
from onnxport.errors import OnnxportError
from onnxport.repository.variant_table import NAMES as VARIANTS
from onnxport.serving.app import create_app

RUNTIMES = ("wasm", "wasm-1t", "webgpu", "webnn")  # every browser runtime the library plans
FIELDS = {"abs", "rel", "top1_min", "cosine_min", "why"}


@pytest.fixture
def overrides_file(tmp_path):
    """overrides_file(data) -> path of a JSON file holding data (text when data is a str)."""

    def write(data, name: str = "tolerances.json") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return path

    return write


# --------------------------------------------------------------------------- the table


def test_the_table_covers_every_variant_in_every_browser_runtime_and_says_why():
    table = browser_tolerances.table()
    assert set(table) == {f"{v}/{r}" for v in VARIANTS for r in RUNTIMES}
    for key, entry in table.items():
        assert set(entry) == FIELDS, key
        assert isinstance(entry["why"], str) and entry["why"].strip(), f"{key} has no why"
        assert entry["abs"] >= 0, key
        # rel is a relative error: the ratio rule allows max(a/b, b/a) <= 1 + rel.
        assert 0 <= entry["rel"] < 1, key
        assert 0 < entry["top1_min"] <= 1 and 0 < entry["cosine_min"] <= 1, key


def test_the_table_is_json_as_served():
    table = browser_tolerances.table()
    assert json.loads(json.dumps(table, allow_nan=False)) == table


@pytest.mark.parametrize("runtime", ["wasm", "wasm-1t"])
def test_fp32_on_wasm_is_onnxruntime_webs_own_cpu_floor(runtime):
    tol = browser_tolerances.lookup("fp32", runtime)
    assert (tol.abs, tol.rel) == (1e-4, 1e-6)


def test_fp32_on_webgpu_is_onnxruntime_webs_own_webgpu_floor():
    tol = browser_tolerances.lookup("fp32", "webgpu")
    assert (tol.abs, tol.rel) == (1e-3, 1e-5)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_lower_precision_is_never_held_tighter_than_fp32(runtime):
    fp32 = browser_tolerances.lookup("fp32", runtime)
    for variant in VARIANTS:
        tol = browser_tolerances.lookup(variant, runtime)
        assert tol.abs >= fp32.abs and tol.rel >= fp32.rel, (variant, runtime)
        assert tol.top1_min <= fp32.top1_min and tol.cosine_min <= fp32.cosine_min, (variant, runtime)


def test_lookup_of_an_unknown_pair_fails():
    with pytest.raises(KeyError):
        browser_tolerances.lookup("fp32", "cuda")


# --------------------------------------------------------------------------- overrides


def test_an_override_merges_over_the_table(overrides_file):
    path = overrides_file({"fp32/wasm": {"abs": 1e-6}, "int8-static/webgpu": {"top1_min": 0.5, "why": "my model"}})
    default = browser_tolerances.table()
    merged = browser_tolerances.table(path)

    assert merged["fp32/wasm"]["abs"] == 1e-6
    # Fields not named keep the table's values; the why says where the value came from.
    assert merged["fp32/wasm"]["rel"] == default["fp32/wasm"]["rel"]
    assert merged["fp32/wasm"]["cosine_min"] == default["fp32/wasm"]["cosine_min"]
    assert str(path) in merged["fp32/wasm"]["why"]
    assert merged["int8-static/webgpu"]["top1_min"] == 0.5
    assert merged["int8-static/webgpu"]["why"] == "my model"
    assert merged["int8-static/webgpu"]["abs"] == default["int8-static/webgpu"]["abs"]
    # Every other entry is untouched, and the built-in table itself is not changed.
    for key in set(default) - {"fp32/wasm", "int8-static/webgpu"}:
        assert merged[key] == default[key], key
    assert browser_tolerances.table() == default

    tol = browser_tolerances.lookup("fp32", "wasm", path)
    assert tol.abs == 1e-6 and tol.rel == default["fp32/wasm"]["rel"]


def test_no_overrides_file_means_the_table():
    assert browser_tolerances.load_overrides(None) == {}
    assert browser_tolerances.table(None) == browser_tolerances.table()


def test_an_empty_overrides_object_changes_nothing(overrides_file):
    assert browser_tolerances.table(overrides_file({})) == browser_tolerances.table()


@pytest.mark.parametrize(
    ("data", "fragments"),
    [
        pytest.param({"fp32/cuda": {"abs": 1}}, ["'fp32/cuda'", "fp32/wasm"], id="unknown-runtime"),
        pytest.param({"fp8/wasm": {"abs": 1}}, ["'fp8/wasm'"], id="unknown-variant"),
        pytest.param({"fp32": {"abs": 1}}, ["'fp32'"], id="not-variant-slash-runtime"),
        pytest.param({"fp32/wasm": {"absolute": 1}}, ["'fp32/wasm'", "abs"], id="unknown-field"),
        pytest.param({"fp32/wasm": 1e-4}, ["'fp32/wasm'", "object"], id="not-an-object"),
        pytest.param([{"fp32/wasm": {"abs": 1}}], [], id="top-level-list"),
        pytest.param("{not json", [], id="not-json"),
    ],
)
def test_a_bad_overrides_file_is_an_error_naming_the_file(overrides_file, data, fragments):
    path = overrides_file(data)
    with pytest.raises(OnnxportError) as caught:
        browser_tolerances.load_overrides(path)
    message = str(caught.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    # table() and lookup() refuse it the same way.
    with pytest.raises(OnnxportError, match="tolerances file"):
        browser_tolerances.table(path)


def test_a_missing_overrides_file_is_an_error_naming_it(tmp_path):
    path = tmp_path / "nowhere.json"
    with pytest.raises(OnnxportError) as caught:
        browser_tolerances.table(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    "values",
    [{"abs": "big"}, {"rel": None}, {"why": 3}, {"top1_min": [1]}],
    ids=["abs-string", "rel-null", "why-number", "top1-list"],
)
def test_a_field_of_the_wrong_type_is_an_error_naming_the_file(overrides_file, values):
    path = overrides_file({"fp32/wasm": values})
    with pytest.raises(OnnxportError) as caught:
        browser_tolerances.table(path)
    assert str(path) in str(caught.value)


# --------------------------------------------------------------------------- GET /api/tolerances


def test_api_tolerances_is_the_table(demo_repository, monkeypatch):
    monkeypatch.delenv("ONNXPORT_TOLERANCES_FILE", raising=False)
    client = create_app({"repository": demo_repository}).test_client()
    response = client.get("/api/tolerances")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_json() == browser_tolerances.table()


def test_api_tolerances_reflects_the_servers_overrides_file(demo_repository, overrides_file):
    path = overrides_file({"fp32/webgpu": {"abs": 5e-3, "why": "my GPU"}, "fp16/wasm": {"rel": 0.5}})
    client = create_app({"repository": demo_repository, "tolerances_file": str(path)}).test_client()
    body = client.get("/api/tolerances").get_json()
    assert body == browser_tolerances.table(path)
    assert body["fp32/webgpu"]["abs"] == 5e-3 and body["fp32/webgpu"]["why"] == "my GPU"
    assert body["fp32/webgpu"]["rel"] == 1e-5
    assert body["fp16/wasm"]["rel"] == 0.5 and str(path) in body["fp16/wasm"]["why"]
    assert body["fp32/wasm"] == browser_tolerances.table()["fp32/wasm"]


def test_a_ratio_written_as_rel_is_refused_with_the_fix(overrides_file):
    # onnxruntime-web's runner writes the ratio 1.000001; here that would allow 100% error.
    path = overrides_file({"fp32/wasm": {"rel": 1.000001}})
    with pytest.raises(
        OnnxportError, match=r"fp32/wasm.rel is a relative error .* got 1.000001; write the ratio 1.000001 as 1e-6"
    ):
        browser_tolerances.load_overrides(path)
