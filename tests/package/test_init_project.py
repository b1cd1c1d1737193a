"""`onnxport init DIR`: a project folder whose recipe template builds as it is, and a refusal to write over files."""

from __future__ import annotations

import json

from onnxport.init_project import FILES
from onnxport.recipe import discover, load_recipe


def test_init_writes_a_project_whose_template_builds(run_cli, tmp_path):
    project = tmp_path / "mine"
    code, out, err = run_cli("init", project)
    assert code == 0, err
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == sorted(FILES)
    assert "wrote" in out and str(project) in out
    readme = (project / "README.md").read_text()
    assert readme.startswith("# mine\n") and "onnxport build" in readme and "onnxport serve" in readme
    assert len(readme.splitlines()) < 20, "the README stays short"
    recipes = discover(project / "models")
    assert load_recipe("example", recipes["example"]).name == "example"
    # What the README says to run, with the repository named (the checkout's default is models/.repository).
    repository = project / "onnxport-repository"
    code, out, err = run_cli("--repository", repository, "build", "--recipes", project / "models", "--quiet",
                             "--forms", "none")
    assert code == 0, err
    entry = json.loads((repository / "manifest.json").read_text())["models"]["example"]
    assert entry["task"] == "classification"
    assert "fp32" in entry["variants"]


def test_init_refuses_a_folder_with_files(run_cli, tmp_path, assert_one_line_error):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    code, _, err = run_cli("init", tmp_path / "taken")
    assert code == 2
    assert_one_line_error(err, str(tmp_path / "taken"), "new or empty folder", "has files")
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["notes.txt"]
    (tmp_path / "file").write_text("")
    code, _, err = run_cli("init", tmp_path / "file")
    assert code == 2
    assert_one_line_error(err, "is a file")


def test_build_without_a_recipes_folder_points_at_init(run_cli, tmp_path, assert_one_line_error):
    code, _, err = run_cli("--repository", tmp_path / "repository", "build", "--recipes", tmp_path / "models")
    assert code == 1
    assert_one_line_error(err, f"recipes folder {tmp_path / 'models'} does not exist", "onnxport init DIR")
