"""`onnxport export triton|kserve` on a manifest whose names would leave OUT (an older onnxport's, or a
hand-edited one): refused with the name and the fix, and nothing is written, inside OUT or beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from name_models import manifest_of, matmul_file, rename_by_hand
from onnxport.deploy import triton
from onnxport.errors import RepositoryError
from onnxport.repository.store import Repository


@pytest.fixture
def repository(tmp_path, imported_repository):
    """A repository holding one imported model, `good`, whose fp32 variant is served."""
    root = imported_repository(matmul_file(tmp_path / "models"), "good")
    assert manifest_of(root)["models"]["good"]["variants"]["fp32"]["status"] == "ok"
    return root


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def export(run_cli, repository, out: Path, engine: str):
    extra = ["--storage-uri", "s3://bucket/models"] if engine == "kserve" else []
    return run_cli("--repository", repository, "export", engine, out, *extra)


@pytest.mark.parametrize("engine", ["triton", "kserve"])
@pytest.mark.parametrize("bad", ["../evil", "", "Bad/Name", "../../../tmp/escape", "has space"])
def test_a_model_name_that_would_leave_out_is_refused_and_nothing_is_written(
    run_cli, assert_one_line_error, tmp_path, repository, bad, engine
):
    rename_by_hand(repository, "good", bad)
    work = tmp_path / "work"
    work.mkdir()
    before = listing(tmp_path)
    code, out, err = export(run_cli, repository, work / "out", engine)
    assert code == 1 and out == ""
    assert_one_line_error(err, f"model name {bad!r}", "name rule", f"onnxport remove {bad!r}")
    assert listing(tmp_path) == before, "no OUT, no staging folder, nothing beside or above it"


def test_a_variant_name_that_would_leave_out_is_refused(run_cli, assert_one_line_error, tmp_path, repository):
    manifest = manifest_of(repository)
    variants = manifest["models"]["good"]["variants"]
    variants["../../x"] = variants["fp32"]
    (repository / "manifest.json").write_text(json.dumps(manifest))
    before = listing(tmp_path)
    code, _, err = export(run_cli, repository, tmp_path / "out", "triton")
    assert code == 1
    assert_one_line_error(err, "variant name '../../x'", "name rule")
    assert listing(tmp_path) == before


def test_two_variants_with_one_triton_name_are_refused(run_cli, assert_one_line_error, tmp_path, repository):
    # `good` served as fp16 and a model named good_fp16 would both be the Triton model good_fp16.
    manifest = manifest_of(repository)
    entry = manifest["models"]["good"]
    entry["variants"]["fp16"] = dict(entry["variants"]["fp32"])
    manifest["models"]["good_fp16"] = {**entry, "name": "good_fp16"}
    (repository / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = export(run_cli, repository, tmp_path / "out", "triton")
    assert code == 1
    assert_one_line_error(err, "'good_fp16'", "'good'", "'fp16'", "both")
    assert not (tmp_path / "out").exists()


def test_a_record_naming_a_file_outside_the_repository_is_not_copied(
    run_cli, assert_one_line_error, tmp_path, repository
):
    secret = tmp_path / "secret.onnx"
    secret.write_bytes(b"not yours")
    manifest = manifest_of(repository)
    manifest["models"]["good"]["variants"]["fp32"]["file"] = "../secret.onnx"
    (repository / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = export(run_cli, repository, tmp_path / "out", "triton")
    assert code == 1
    assert_one_line_error(err, "refusing to read", "secret.onnx", "not inside")
    assert not (tmp_path / "out").exists()


def test_the_writer_itself_refuses_a_path_outside_its_folder(tmp_path, repository):
    """write_models checks every path it writes, even for names that never went through check_names."""
    variants = triton.served(manifest_of(repository))
    model, variant, entry, record = variants[0]
    out = tmp_path / "out"
    with pytest.raises(RepositoryError, match="not inside"):
        triton.write_atomically(
            out,
            lambda folder: triton.write_models(Repository(repository), [("../evil", variant, entry, record)], folder),
        )
    assert not out.exists() and not (tmp_path / "evil").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == [], "no staging folder left"


def test_a_good_repository_still_exports(run_cli, tmp_path, repository):
    code, _, err = export(run_cli, repository, tmp_path / "out", "triton")
    assert code == 0, err
    assert listing(tmp_path / "out") == ["good", "good/1", "good/1/model.onnx", "good/config.pbtxt"]
