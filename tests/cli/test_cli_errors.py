"""server/onnxport/cli/ on bad input: one stderr line that names the culprit; exit 2 for what was typed (a name,
a folder), 1 for a recipe that fails (tests/cli/test_exit_codes.py has every command's usage errors)."""

from __future__ import annotations

import pytest

from onnxport.recipe import default_recipes_dir


@pytest.fixture
def repository(tmp_path):
    return tmp_path / "repository"


def test_unknown_model_names_it_and_lists_the_recipes(run_cli, assert_one_line_error, repository):
    code, out, err = run_cli("--repository", repository, "build", "--quiet", "nosuchmodel")
    assert code == 2
    assert out == ""
    assert_one_line_error(err, "'nosuchmodel'", str(default_recipes_dir()), "digits", "iris", "minilm")
    assert not (repository / "manifest.json").exists()


def test_unknown_model_in_a_recipes_folder(run_cli, assert_one_line_error, repository, recipes_dir):
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", recipes_dir, "tiny", "nope")
    assert code == 2
    assert_one_line_error(err, "'nope'", str(recipes_dir), "tiny")


def test_missing_recipes_folder(run_cli, assert_one_line_error, repository, tmp_path):
    missing = tmp_path / "no-recipes-here"
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", missing)
    assert code == 2
    assert_one_line_error(err, "--recipes", str(missing), "no such folder")


def test_syntax_error_names_the_file_and_line(run_cli, assert_one_line_error, repository, write_recipe):
    path = write_recipe("broken", "import numpy\n\ndef load(:\n    pass\n")
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "broken")
    assert code == 1
    assert_one_line_error(err, "'broken'", str(path), "line 3", "SyntaxError")


def test_import_error_in_a_recipe_names_the_file(run_cli, assert_one_line_error, repository, write_recipe):
    path = write_recipe("needs", "import no_such_package_for_onnxport\n")
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "needs")
    assert code == 1
    assert_one_line_error(err, str(path), "ModuleNotFoundError", "no_such_package_for_onnxport")


def test_recipe_without_RECIPE(run_cli, assert_one_line_error, repository, write_recipe):
    path = write_recipe("empty", '"""A module that forgot its recipe."""\nVALUE = 1\n')
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "empty")
    assert code == 1
    assert_one_line_error(err, "'empty'", str(path), "RECIPE = Recipe(...)")


def test_RECIPE_of_the_wrong_type(run_cli, assert_one_line_error, repository, write_recipe):
    path = write_recipe("dict", 'RECIPE = {"name": "dict"}\n')
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "dict")
    assert code == 1
    assert_one_line_error(err, str(path), "RECIPE = Recipe(...)")


def test_recipe_name_must_match_the_file_name(run_cli, assert_one_line_error, repository, write_recipe):
    path = write_recipe("renamed", NAME='"tiny"')
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "renamed")
    assert code == 1
    assert_one_line_error(err, str(path), "'tiny'", "expected 'renamed'")


def test_recipe_with_an_unknown_task(run_cli, assert_one_line_error, repository, write_recipe):
    path = write_recipe("ranker")
    path.write_text(path.read_text().replace('task="classification"', 'task="ranking"'))
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "ranker")
    assert code == 1
    assert_one_line_error(err, str(path), "'ranking'", "classification")


def test_info_of_an_unknown_model_in_an_empty_repository(run_cli, assert_one_line_error, repository):
    code, out, err = run_cli("--repository", repository, "info", "ghost")
    assert code == 2
    assert out == ""
    assert_one_line_error(err, "'ghost'", "onnxport build")


def test_info_of_an_unknown_model_lists_the_built_ones(run_cli, assert_one_line_error, repository, recipes_dir):
    assert run_cli("--repository", repository, "build", "--quiet", "--recipes", recipes_dir)[0] == 0
    code, _, err = run_cli("--repository", repository, "info", "ghost")
    assert code == 2
    assert_one_line_error(err, "'ghost'", "tiny")


def test_a_failed_load_leaves_no_repository_behind(run_cli, assert_one_line_error, repository, write_recipe):
    path = write_recipe("empty", "VALUE = 1\n")
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "empty")
    assert_one_line_error(err, "empty")
    assert not repository.exists()


def test_a_recipe_pipeline_that_does_not_fit_its_model_fails_the_build(
    run_cli, assert_one_line_error, repository, write_recipe
):
    """A recipe's pipeline spec is checked against its exported model (an import's is checked by the importer)."""
    spec = {
        "image": {
            "input": "pixels",
            "mode": "L",
            "resize": {"width": 2, "height": 2, "filter": "bilinear"},
            "crop": None,
            "invert": False,
            "scale": 1.0,
            "mean": [0.0],
            "std": [1.0],
            "layout": "flat",
            "dtype": "float32",
        },
        "answer": {"output": "probabilities", "steps": [{"op": "argmax"}]},
    }
    path = write_recipe("piped")
    path.write_text(
        path.read_text().replace(
            '    metric_output="probabilities",\n', f'    metric_output="probabilities",\n    pipeline={spec!r},\n'
        )
    )
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", path.parent, "piped")
    assert code == 1
    assert_one_line_error(err, "piped: pipeline.image.input 'pixels' is not one of the model's inputs (features)")
    assert not (repository / "manifest.json").exists()
