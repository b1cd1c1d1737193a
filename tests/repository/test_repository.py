"""server/onnxport/repository/store.py through real builds: atomic commits, deterministic bytes, one writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onnxport.errors import RepositoryError
from onnxport.recipe import default_recipes_dir
from onnxport.repository.store import SCHEMA_VERSION, Repository


def listing(root: Path) -> dict[str, bytes]:
    """Every file under root (hidden ones too) with its bytes, except the lock file."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"
    }


def variant_hashes(root: Path) -> dict[str, dict[str, str]]:
    manifest = json.loads((root / "manifest.json").read_text())
    return {
        name: {
            **{v: r["sha256"] for v, r in entry["variants"].items() if "sha256" in r},
            "golden": entry["golden"]["sha256"],
        }
        for name, entry in manifest["models"].items()
    }


def build(run_cli, repository: Path, recipes: Path, *args: str) -> tuple[int, str, str]:
    # Every form, whatever it gains (the default keeps none of a tiny model's): forms are files to commit too.
    return run_cli("--repository", repository, "build", "--quiet", "--forms", "all", "--recipes", recipes, *args)


@pytest.fixture
def built(run_cli, tmp_path, recipes_dir) -> Path:
    """A repository holding the tiny recipe."""
    repository = tmp_path / "repository"
    code, _, err = build(run_cli, repository, recipes_dir, "tiny")
    assert code == 0, err
    return repository


FAILURES = [
    pytest.param(
        {"SHIFT": "1.0"},
        ("bad:", "'probabilities'", "first at index [0, 0]", "tolerance abs 1e-05"),
        id="export-outside-tolerance",
    ),
    pytest.param(
        {"LOAD_ERROR": 'RuntimeError("the data set is gone")'}, ("bad", "the data set is gone"), id="load-raises"
    ),
]


@pytest.mark.parametrize(("knobs", "fragments"), FAILURES)
def test_a_failed_build_leaves_the_repository_as_it_was(
    run_cli, assert_one_line_error, built, recipes_dir, write_recipe, knobs, fragments
):
    # "fresh" builds fine and stages new files; "bad" fails after it, in the same transaction.
    write_recipe("fresh", ALPHA="1e-2")
    write_recipe("bad", **knobs)
    before = listing(built)
    try:
        code, out, err = build(run_cli, built, recipes_dir, "fresh", "bad")
    finally:
        assert listing(built) == before  # manifest bytes, artifacts/ and testdata/: nothing moved
        assert not (built / ".staging").exists()
        assert not (built / ".manifest.json.tmp").exists()
    assert code == 1
    assert out == ""
    assert_one_line_error(err, *fragments)


def test_the_repository_is_usable_after_a_failed_build(run_cli, built, recipes_dir, write_recipe):
    write_recipe("bad", SHIFT="1.0")
    assert build(run_cli, built, recipes_dir, "bad")[0] == 1
    write_recipe("fresh", ALPHA="1e-2")
    code, _, err = build(run_cli, built, recipes_dir, "fresh")
    assert code == 0, err
    assert set(variant_hashes(built)) == {"tiny", "fresh"}


def test_commit_keeps_only_referenced_files(run_cli, built, recipes_dir, write_recipe):
    write_recipe("tiny", ALPHA="1e-2")  # same name, other weights
    assert build(run_cli, built, recipes_dir, "tiny")[0] == 0
    manifest = json.loads((built / "manifest.json").read_text())
    made = [r for r in manifest["models"]["tiny"]["variants"].values() if "file" in r]  # not the skipped
    made += [form for r in made for form in r.get("forms", {}).values() if "file" in form]
    assert len(made) > 2, "the served variants' forms are files too"
    referenced = {r["file"] for r in made} | {r["reference"]["file"] for r in made}
    referenced.add(manifest["models"]["tiny"]["golden"]["path"])
    on_disk = {str(p.relative_to(built)) for folder in ("artifacts", "testdata") for p in (built / folder).iterdir()}
    assert on_disk == referenced


def test_same_recipe_twice_gives_identical_bytes(run_cli, tmp_path, recipes_dir):
    first, second = tmp_path / "first", tmp_path / "second"
    for repository in (first, second):
        code, _, err = build(run_cli, repository, recipes_dir, "--force", "tiny")
        assert code == 0, err
    assert variant_hashes(first) == variant_hashes(second)
    # The manifest is identical too, but for the speed measured on this machine at build time and
    # the ORT form's name (docs/guide/build-and-import.md, "deterministic").
    assert comparable(first) == comparable(second)


def comparable(repository: Path) -> dict:
    """The manifest without what may differ between two builds of the same recipe: the native speed, and
    the ORT form's bytes (onnxruntime writes its kernel-type table in a per-process hash-map order; the
    size, graph and outputs are the same)."""
    manifest = json.loads((repository / "manifest.json").read_text())
    for entry in manifest["models"].values():
        for record in entry["variants"].values():
            record.pop("speed", None)
            ort_form = record.get("forms", {}).get("ort")
            if ort_form and ort_form.get("file"):
                ort_form.update(file="artifacts/<per build>.ort", sha256="<per build>")
    return manifest


@pytest.mark.slow
def test_digits_twice_gives_identical_bytes(run_cli, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for repository in (first, second):
        code, _, err = build(run_cli, repository, default_recipes_dir(), "--force", "digits")
        assert code == 0, err
    hashes = variant_hashes(first)
    assert set(hashes["digits"]) == {"fp32", "fp16", "int8-dynamic", "int8-static", "int8-weights", "int4", "golden"}
    assert hashes == variant_hashes(second)


def test_a_second_writer_is_refused(run_cli, assert_one_line_error, tmp_path, recipes_dir):
    repository = tmp_path / "repository"
    with Repository(repository).transaction() as holder:
        code, _, err = build(run_cli, repository, recipes_dir, "tiny")
        assert code == 1
        assert_one_line_error(err, str(repository), "another onnxport process")
        assert holder.staging.is_dir()  # the refused writer did not wipe the holder's staging
    assert not (repository / "manifest.json").exists()


def test_nested_transactions_are_refused(tmp_path):
    repository = Repository(tmp_path / "repository")
    with repository.transaction():
        with pytest.raises(RepositoryError, match="being written by another onnxport process"):
            with repository.transaction():
                pass
    with repository.transaction():  # released once the holder is done
        pass


def test_corrupt_manifest_is_a_clear_error(run_cli, assert_one_line_error, built, recipes_dir):
    manifest = built / "manifest.json"
    manifest.write_text('{"schema": "onnxport.manifest", "models": {')
    before = listing(built)
    for command in (["list"], ["info", "tiny"], ["build", "--quiet", "--recipes", recipes_dir, "--force", "tiny"]):
        code, _, err = run_cli("--repository", built, *command)
        assert code == 1, command
        assert_one_line_error(err, str(manifest), "not readable JSON")
    assert listing(built) == before


def test_manifest_of_another_schema_is_a_clear_error(run_cli, assert_one_line_error, built):
    manifest = built / "manifest.json"
    manifest.write_text(json.dumps({"schema": "onnxport.manifest", "schema_version": 99, "models": {}}))
    code, _, err = run_cli("--repository", built, "list")
    assert code == 1
    assert_one_line_error(err, str(manifest), "99", f"expected 'onnxport.manifest' version {SCHEMA_VERSION}")


def test_a_manifest_of_an_older_version_says_how_to_rebuild(run_cli, assert_one_line_error, built, recipes_dir):
    manifest = built / "manifest.json"
    manifest.write_text(json.dumps({"schema": "onnxport.manifest", "schema_version": SCHEMA_VERSION - 1, "models": {}}))
    for command in (["list"], ["build", "--quiet", "--recipes", recipes_dir, "tiny"]):
        code, _, err = run_cli("--repository", built, *command)
        assert code == 1, command
        assert_one_line_error(err, str(manifest), "older onnxport", f"remove {built}", "onnxport build")


def test_a_stale_staging_folder_is_cleared(run_cli, built, recipes_dir):
    leftover = built / ".staging" / "killed-build" / "artifacts" / "half.onnx"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"half a model")
    assert build(run_cli, built, recipes_dir, "tiny")[0] == 0
    assert not (built / ".staging").exists()
