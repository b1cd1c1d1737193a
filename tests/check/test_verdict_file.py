"""server/onnxport/check/verdict_file.py: the browser verdicts `onnxport check` keeps in <repository>/conformance.json,
and GET /api/conformance answering that file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from fixtures.servers import buffered_client
from onnxport.check import check_run as runner
from onnxport.check import verdict_file
from onnxport.repository.store import empty_manifest
from onnxport.serving.app import create_app

SHA = {name: name[0] * 64 for name in ("aaa", "bbb", "ccc", "ddd")}
CHROME = {
    "user_agent": "Mozilla/5.0 HeadlessChrome/140",
    "cross_origin_isolated": True,
    "adapter": {"vendor": "google", "architecture": "swiftshader", "fallback": True},
}
LAPTOP = {"user_agent": "Mozilla/5.0 Chrome/141", "adapter": {"vendor": "apple", "architecture": "metal-3"}}


def manifest(**variants: str) -> dict:
    """A manifest of model `m` whose variants (name -> sha256) are served, plus a rejected int8-static."""
    records = {name: {"status": "ok", "sha256": sha, "file": f"artifacts/{sha}.onnx"} for name, sha in variants.items()}
    records["int8-static"] = {"status": "rejected", "reason": "too far from fp32"}
    return {"models": {"m": {"variants": records}}}


def row(variant: str = "fp32", runtime: str = "wasm", status: str = "pass", **extra) -> dict:
    return {
        "model": "m",
        "variant": variant,
        "runtime": runtime,
        "task": "classification",
        "status": status,
        "reason": None if status == "pass" else f"{status} for a reason",
        "basis": "floor" if variant == "fp32" else "budget",
        "outputs": {"label": {"max_abs": 0.0}, "probabilities": {"max_abs": 2.5e-7, "max_rel": 1.0}},
        "identity": {"threads": 4, "onnxruntime_web": "1.30.0"},
        **extra,
    }


def report(*rows: dict, browser: dict = CHROME, created: str = "2025-06-01T12:00:00.000Z") -> dict:
    return {
        "schema": "onnxport.conformance",
        "schema_version": 1,
        "created": created,
        "browser": browser,
        "results": list(rows),
    }


def entries_of(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    assert (data["schema"], data["schema_version"]) == ("onnxport.verdicts", 1)
    assert list(data) == ["schema", "schema_version", "verdicts"]
    return data["verdicts"]


def keys_of(entries: list[dict]) -> list[tuple]:
    return [(e["variant"], e["runtime"], e["status"]) for e in entries]


# --------------------------------------------------------------------------- entries from a report


def test_one_entry_per_decided_browser_row():
    checked = manifest(fp32=SHA["aaa"], fp16=SHA["bbb"])
    rows = [
        {"model": "m", "variant": "fp32", "runtime": "source", "status": "pass", "outputs": {"p": {"max_abs": 1.0}}},
        row("fp32", "wasm"),
        row("fp32", "wasm-1t", "fail"),
        row("fp32", "webgpu", "error", outputs={}),
        row("fp16", "wasm", "unsupported", outputs=None, identity=None),
        row("fp16", "webgpu", "skipped"),
    ]
    entries = verdict_file.from_report(report(*rows), checked)
    assert keys_of(entries) == [
        ("fp32", "wasm", "pass"),
        ("fp32", "wasm-1t", "fail"),
        ("fp32", "webgpu", "error"),
        ("fp16", "wasm", "unsupported"),
        ("fp16", "webgpu", "skipped"),
    ]
    first = entries[0]
    assert first == {
        "model": "m",
        "variant": "fp32",
        "form": None,
        "runtime": "wasm",
        "sha256": SHA["aaa"],
        "status": "pass",
        "reason": None,
        "basis": "floor",
        "max_abs": 2.5e-7,
        "device_kind": "Mozilla/5.0 HeadlessChrome/140 | google/swiftshader",
        "browser": CHROME,
        "onnxruntime_web": "1.30.0",
        "checked": "2025-06-01T12:00:00.000Z",
    }
    assert entries[1]["reason"] == "fail for a reason"
    assert entries[2]["max_abs"] is None  # no outputs compared
    assert entries[3]["max_abs"] is None and entries[3]["onnxruntime_web"] is None
    assert entries[3]["sha256"] == SHA["bbb"]
    assert entries[3]["basis"] == "budget"  # fp16: judged by its budget against fp32


def test_a_row_without_a_basis_records_none():
    # Reports of an older page (element-wise against the same variant only) have no basis.
    entries = verdict_file.from_report(report({**row(), "basis": None}), manifest(fp32=SHA["aaa"]))
    assert entries[0]["basis"] is None


def test_sha256_of_the_row_wins_over_the_manifest():
    entries = verdict_file.from_report(report(row(sha256=SHA["ccc"])), manifest(fp32=SHA["aaa"]))
    assert entries[0]["sha256"] == SHA["ccc"]


def test_a_row_of_a_variant_the_manifest_lacks_is_not_recorded():
    assert verdict_file.from_report(report(row("int8-static"), row("int8-dynamic")), manifest(fp32=SHA["aaa"])) == []


def test_device_kind():
    assert verdict_file.device_kind({**CHROME, "device_kind": "swiftshader-ci"}) == "swiftshader-ci"
    assert verdict_file.device_kind(LAPTOP) == "Mozilla/5.0 Chrome/141 | apple/metal-3"
    assert verdict_file.device_kind({"user_agent": "UA", "adapter": None}) == "UA"
    nvidia = {"user_agent": "UA", "adapter": {"vendor": "nvidia", "architecture": ""}}
    assert verdict_file.device_kind(nvidia) == "UA | nvidia"


def test_max_abs_is_the_largest_over_the_outputs():
    outputs = {"a": {"max_abs": 1e-3}, "b": {"max_abs": 4e-2}, "c": {"missing": True}}
    assert verdict_file.max_abs({"outputs": outputs}) == 4e-2
    assert verdict_file.max_abs({"outputs": {"a": {"max_abs": None}}}) is None
    assert verdict_file.max_abs({}) is None


def test_checked_defaults_to_now_without_a_created_time():
    entries = verdict_file.from_report({**report(row()), "created": None}, manifest(fp32=SHA["aaa"]))
    assert entries[0]["checked"].startswith("20") and "T" in entries[0]["checked"]


# --------------------------------------------------------------------------- merging


def test_merge_into_a_new_file(tmp_path):
    current = manifest(fp32=SHA["aaa"])
    path = verdict_file.record(tmp_path, report(row("fp32", "wasm"), row("fp32", "webgpu")), current, current)
    assert path == tmp_path / "conformance.json"
    assert keys_of(entries_of(path)) == [("fp32", "wasm", "pass"), ("fp32", "webgpu", "pass")]


def test_a_new_verdict_replaces_the_old_one_of_the_same_device_kind(tmp_path):
    current = manifest(fp32=SHA["aaa"], fp16=SHA["bbb"])
    verdict_file.record(
        tmp_path, report(row("fp32", "wasm"), row("fp16", "wasm"), created="2025-06-01T00:00:00Z"), current, current
    )
    verdict_file.record(tmp_path, report(row("fp32", "wasm", "fail"), created="2025-06-02T00:00:00Z"), current, current)
    entries = entries_of(tmp_path / "conformance.json")
    assert keys_of(entries) == [("fp32", "wasm", "fail"), ("fp16", "wasm", "pass")]  # fp16 untouched
    assert [e["checked"] for e in entries] == ["2025-06-02T00:00:00Z", "2025-06-01T00:00:00Z"]


def test_another_device_kind_is_kept_beside(tmp_path):
    current = manifest(fp32=SHA["aaa"])
    verdict_file.record(tmp_path, report(row("fp32", "webgpu"), browser=CHROME), current, current)
    verdict_file.record(tmp_path, report(row("fp32", "webgpu", "fail"), browser=LAPTOP), current, current)
    entries = entries_of(tmp_path / "conformance.json")
    assert sorted((e["device_kind"], e["status"]) for e in entries) == [
        ("Mozilla/5.0 Chrome/141 | apple/metal-3", "fail"),
        ("Mozilla/5.0 HeadlessChrome/140 | google/swiftshader", "pass"),
    ]


def test_verdicts_of_artifacts_no_longer_served_are_dropped(tmp_path):
    before = manifest(fp32=SHA["aaa"], fp16=SHA["bbb"])
    verdict_file.record(
        tmp_path, report(row("fp32", "wasm"), row("fp16", "wasm"), row("fp16", "webgpu")), before, before
    )
    # A new build: fp32 has a new artifact, fp16 is no longer served; then only fp32 on webgpu is checked.
    after = {
        "models": {
            "m": {
                "variants": {
                    "fp32": {"status": "ok", "sha256": SHA["ccc"]},
                    "fp16": {"status": "rejected", "sha256": SHA["bbb"]},
                }
            }
        }
    }
    verdict_file.record(tmp_path, report(row("fp32", "webgpu")), after, after)
    entries = entries_of(tmp_path / "conformance.json")
    assert [(e["variant"], e["runtime"], e["sha256"]) for e in entries] == [("fp32", "webgpu", SHA["ccc"])]


def test_a_build_during_the_check_makes_its_own_verdicts_stale(tmp_path):
    checked = manifest(fp32=SHA["aaa"])
    now = manifest(fp32=SHA["ddd"])
    verdict_file.record(tmp_path, report(row("fp32", "wasm")), checked, now)
    assert entries_of(tmp_path / "conformance.json") == []


def test_a_model_removed_from_the_manifest_loses_its_verdicts(tmp_path):
    current = manifest(fp32=SHA["aaa"])
    verdict_file.record(tmp_path, report(row()), current, current)
    verdict_file.record(tmp_path, report(), current, {"models": {}})
    assert entries_of(tmp_path / "conformance.json") == []


def test_order_is_model_variant_runtime():
    current = manifest(fp32=SHA["aaa"], fp16=SHA["bbb"], **{"int8-dynamic": SHA["ccc"]})
    new = verdict_file.from_report(
        report(
            row("int8-dynamic", "webgpu"),
            row("fp16", "wasm-1t"),
            row("fp32", "webgpu"),
            row("fp16", "wasm"),
            row("fp32", "wasm"),
        ),
        current,
    )
    assert [(e["variant"], e["runtime"]) for e in verdict_file.merge([], new, current)] == [
        ("fp32", "wasm"),
        ("fp32", "webgpu"),
        ("fp16", "wasm"),
        ("fp16", "wasm-1t"),
        ("int8-dynamic", "webgpu"),
    ]


def test_malformed_old_entries_are_dropped_not_fatal():
    current = manifest(fp32=SHA["aaa"])
    old = ["not an entry", {"model": "m", "sha256": ["not", "a", "hash"]}, {"model": "m"}]
    assert verdict_file.merge(old, [], current) == []


# --------------------------------------------------------------------------- the file


def test_the_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    current = manifest(fp32=SHA["aaa"])
    verdict_file.record(tmp_path, report(row()), current, current)
    verdict_file.record(tmp_path, report(row("fp32", "wasm-1t")), current, current)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "conformance.json"]  # .lock: the repository's one


def test_a_failed_write_keeps_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    current = manifest(fp32=SHA["aaa"])
    verdict_file.record(tmp_path, report(row()), current, current)
    before = (tmp_path / "conformance.json").read_text()

    def broken_replace(source, target):
        assert Path(source).parent == Path(target).parent  # the temporary file is beside the target
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        verdict_file.record(tmp_path, report(row("fp32", "webgpu")), current, current)
    assert (tmp_path / "conformance.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "conformance.json"]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("{half a file", "not readable JSON"),
        ("[1, 2]", "expected schema 'onnxport.verdicts' version 1"),
        ('{"schema": "onnxport.verdicts", "schema_version": 2, "verdicts": []}', "got ('onnxport.verdicts', 2)"),
        ('{"schema": "onnxport.verdicts", "schema_version": 1, "verdicts": {}}', "with a verdicts list"),
    ],
)
def test_an_unreadable_file_is_replaced_with_a_warning(tmp_path, text, fragment):
    (tmp_path / "conformance.json").write_text(text)
    warnings: list[str] = []
    current = manifest(fp32=SHA["aaa"])
    verdict_file.record(tmp_path, report(row()), current, current, warn=warnings.append)
    assert len(warnings) == 1
    assert str(tmp_path / "conformance.json") in warnings[0] and fragment in warnings[0]
    assert "replaced" in warnings[0]
    assert keys_of(entries_of(tmp_path / "conformance.json")) == [("fp32", "wasm", "pass")]


def test_the_default_warning_goes_to_stderr(tmp_path, capsys):
    (tmp_path / "conformance.json").write_text("{half a file")
    current = manifest(fp32=SHA["aaa"])
    verdict_file.record(tmp_path, report(row()), current, current)
    err = capsys.readouterr().err
    assert err.startswith("onnxport: warning: ") and "conformance.json" in err


def test_the_check_warns_instead_of_failing_when_the_repository_takes_no_verdicts(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(
        verdict_file, "write", lambda path, entries: (_ for _ in ()).throw(PermissionError("read-only"))
    )
    (tmp_path / "manifest.json").write_text(json.dumps({**empty_manifest(), **manifest(fp32=SHA["aaa"])}))
    runner._record_verdicts(tmp_path, report(row()), manifest(fp32=SHA["aaa"]))
    err = capsys.readouterr().err
    assert err.startswith("onnxport: warning: the verdicts were not recorded") and "read-only" in err


# --------------------------------------------------------------------------- GET /api/conformance


@pytest.fixture
def client_of(monkeypatch):
    for name in list(os.environ):
        if name.startswith("ONNXPORT_"):
            monkeypatch.delenv(name)

    def make(repository: Path) -> FlaskClient:
        return buffered_client(create_app({"repository": repository}))

    return make


def test_api_conformance_is_204_before_any_check(repository_copy, client_of):
    client = client_of(repository_copy(["iris"]))
    response = client.get("/api/conformance")
    assert response.status_code == 204
    assert response.data == b"" and "Content-Type" not in response.headers
    assert response.headers["Cache-Control"] == "no-cache"


def test_api_conformance_answers_the_recorded_verdicts(repository_copy, client_of):
    repository = repository_copy(["iris"])
    current = json.loads((repository / "manifest.json").read_text())
    rows = [{**row("fp32", "wasm"), "model": "iris"}, {**row("fp16", "webgpu", "fail"), "model": "iris"}]
    verdict_file.record(repository, report(*rows), current, current)
    client = client_of(repository)
    response = client.get("/api/conformance")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.data == (repository / "conformance.json").read_bytes()
    body = response.json
    assert body["schema"] == "onnxport.verdicts"
    iris = current["models"]["iris"]["variants"]
    assert [(e["variant"], e["sha256"]) for e in body["verdicts"]] == [
        ("fp32", iris["fp32"]["sha256"]),
        ("fp16", iris["fp16"]["sha256"]),
    ]


def test_a_failures_reason_data_is_kept_beside_its_words():
    data = {"code": "top1_below_bound", "value": 0.5, "bound": 0.97, "against": "fp32", "limit": "budget"}
    failed = row("fp16", status="fail", reason_data=data)
    entries = verdict_file.from_report(report(row(), failed), manifest(fp32=SHA["aaa"], fp16=SHA["bbb"]))
    assert "reason_data" not in entries[0]
    assert entries[1]["reason_data"] == data and entries[1]["reason"] == "fail for a reason"
