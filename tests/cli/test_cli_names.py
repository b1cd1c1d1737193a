"""The name rule at the command line: `import --name`, recipe files, `--replace`, and `onnxport remove`."""

from __future__ import annotations

import pytest

from name_models import files_of, manifest_of, matmul_file, rename_by_hand
from onnxport.repository.names import RULE

BAD_NAMES = ["../evil", "Bad/Name", "", "has space", "UPPER", ".hidden", "a..b", "-flag", "x" * 65, "tab\there"]


@pytest.fixture
def repository(tmp_path):
    return tmp_path / "repository"


def imported(run_cli, repository, path, name, *extra) -> None:
    code, _, err = run_cli(
        "--repository", repository, "import", path, "--name", name, "--quiet", "--forms", "none", *extra
    )
    assert code == 0, err


@pytest.mark.parametrize("name", BAD_NAMES)
def test_each_bad_name_exits_2_with_the_rule_and_writes_nothing(
    run_cli, assert_one_line_error, tmp_path, repository, name
):
    path = matmul_file(tmp_path / "models")
    code, out, err = run_cli("--repository", repository, "import", path, f"--name={name}", "--quiet")  # '-flag' too
    assert code == 2
    assert out == ""
    assert_one_line_error(err, f"--name {name!r}", RULE, "for example")
    assert not repository.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models"]  # nothing beside the repository either


def test_the_name_is_checked_before_the_model_is_read(run_cli, assert_one_line_error, tmp_path, repository):
    code, _, err = run_cli("--repository", repository, "import", tmp_path / "missing.onnx", "--name", "../evil")
    assert code == 2
    assert_one_line_error(err, "'../evil'", RULE)


def test_a_taken_name_is_refused_unless_replace(run_cli, assert_one_line_error, tmp_path, repository):
    first, second = matmul_file(tmp_path, 0), matmul_file(tmp_path, 1)
    imported(run_cli, repository, first, "m")
    before = files_of(repository)

    code, out, err = run_cli("--repository", repository, "import", second, "--name", "m", "--quiet", "--forms", "none")
    assert code == 2 and out == ""
    assert_one_line_error(err, "'m'", "already in the repository", "imported from", str(first), "--replace")
    assert files_of(repository) == before

    # The same import again replaces nothing: it is skipped, as before.
    code, out, err = run_cli("--repository", repository, "import", first, "--name", "m", "--forms", "none")
    assert code == 0 and "skipped" in out, err
    assert files_of(repository) == before

    imported(run_cli, repository, second, "m", "--replace")
    entry = manifest_of(repository)["models"]["m"]
    assert entry["provenance"]["import_path"] == str(second.resolve())
    assert files_of(repository) != before


def test_import_and_recipe_build_do_not_take_each_others_names(
    run_cli, assert_one_line_error, tmp_path, repository, recipes_dir
):
    # `tiny` is a recipe in recipes_dir; a user imports a model of that name first.
    imported(run_cli, repository, matmul_file(tmp_path), "tiny")
    before = files_of(repository)
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--forms", "none", "--recipes", recipes_dir)
    assert code == 2
    assert_one_line_error(err, "'tiny'", "imported from", "build --replace", "onnxport remove")
    assert files_of(repository) == before

    code, _, err = run_cli(
        "--repository", repository, "build", "--quiet", "--forms", "none", "--recipes", recipes_dir, "--replace"
    )
    assert code == 0, err
    assert manifest_of(repository)["models"]["tiny"]["kind"] == "sklearn"
    before = files_of(repository)

    code, _, err = run_cli("--repository", repository, "import", matmul_file(tmp_path), "--name", "tiny", "--quiet")
    assert code == 2
    assert_one_line_error(err, "'tiny'", "classification model built from the recipe tiny.py", "--replace")
    assert files_of(repository) == before


def test_a_recipe_file_with_a_bad_name_is_refused_before_it_runs(
    run_cli, assert_one_line_error, repository, write_recipe
):
    # Were its code run, the error would be this SystemExit, not the name.
    path = write_recipe("Bad Name", "raise SystemExit('the recipe ran')\n")
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "Bad Name")
    assert code == 1
    assert_one_line_error(err, str(path), "'Bad Name'", RULE, "rename the file")
    assert not repository.exists()


def test_remove_is_all_or_nothing_and_deletes_only_unshared_files(run_cli, assert_one_line_error, tmp_path, repository):
    imported(run_cli, repository, matmul_file(tmp_path, 0), "a")
    imported(run_cli, repository, matmul_file(tmp_path, 1), "b")
    imported(run_cli, repository, matmul_file(tmp_path, 1), "b-twin")  # the same file: shared artifacts
    manifest = manifest_of(repository)
    files = {
        name: {v["file"] for v in entry["variants"].values() if v.get("file")}
        for name, entry in manifest["models"].items()
    }
    assert files["b"] == files["b-twin"] and not files["a"] & files["b"]

    before = files_of(repository)
    code, out, err = run_cli("--repository", repository, "remove", "a", "ghost")
    assert code == 2 and out == ""
    assert_one_line_error(err, "'ghost'", "a, b, b-twin", "nothing was removed")
    assert files_of(repository) == before

    code, out, err = run_cli("--repository", repository, "remove", "a", "b")
    assert code == 0, err
    assert "removed a, b" in out
    assert sorted(manifest_of(repository)["models"]) == ["b-twin"]
    assert not any((repository / f).exists() for f in files["a"]), "a's files are no longer referenced: deleted"
    assert all((repository / f).exists() for f in files["b"]), "b's files are b-twin's too: kept"
    assert not (repository / ".staging").exists()
    code, out, _ = run_cli("--repository", repository, "list", "--json")
    assert code == 0 and '"b-twin"' in out and '"a"' not in out


def test_remove_of_an_unknown_name_lists_the_models(run_cli, assert_one_line_error, tmp_path, repository):
    code, _, err = run_cli("--repository", repository, "remove", "ghost")
    assert code == 2
    assert_one_line_error(err, "'ghost'", "the repository has: none")
    assert not repository.exists()
    imported(run_cli, repository, matmul_file(tmp_path), "kept")
    code, _, err = run_cli("--repository", repository, "remove", "ghost")
    assert code == 2
    assert_one_line_error(err, "'ghost'", "the repository has: kept")
    assert run_cli("--repository", repository, "remove")[0] == 2  # argparse: a name is required


def test_an_old_repositorys_bad_name_can_be_removed_and_does_not_block_other_writes(run_cli, tmp_path, repository):
    imported(run_cli, repository, matmul_file(tmp_path, 0), "old")
    rename_by_hand(repository, "old", "../Old Model")
    # Entries left as they are are not judged again: another import still lands.
    imported(run_cli, repository, matmul_file(tmp_path, 1), "new")
    assert sorted(manifest_of(repository)["models"]) == ["../Old Model", "new"]

    code, out, err = run_cli("--repository", repository, "remove", "../Old Model")
    assert code == 0, err
    assert sorted(manifest_of(repository)["models"]) == ["new"]


def test_bench_refuses_a_bad_stored_name_before_measuring(run_cli, assert_one_line_error, tmp_path, repository):
    imported(run_cli, repository, matmul_file(tmp_path), "a")
    rename_by_hand(repository, "a", "A/B")
    code, _, err = run_cli("--repository", repository, "bench", "--runtimes", "", "--runs", "1")
    assert code == 1
    assert_one_line_error(err, "model name 'A/B'", "name rule", "onnxport remove 'A/B'")
    assert not (repository / "bench.json").exists()
