"""`onnxport init DIR`: a project folder whose recipe template builds as it is, and a refusal to write over files."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from readme_commands import commands, links

from onnxport.init_project import FILES, readme
from onnxport.install_source import Source, installed_from, placeholder
from onnxport.recipe import discover, load_recipe
from onnxport.text_tables import human_bytes

EXTRAS = set(
    tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
)


def test_init_writes_a_project_whose_template_builds(run_cli, tmp_path):
    project = tmp_path / "mine"
    code, out, err = run_cli("init", project)
    assert code == 0, err
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == sorted(FILES)
    assert "wrote" in out and str(project) in out
    readme = (project / "README.md").read_text()
    assert readme.startswith("# mine\n") and "onnxport build" in readme and "onnxport serve" in readme
    assert len(readme.splitlines()) < 30, "the README stays short"
    # Its commands, in order; the pip lines name what this onnxport was installed from (here, the checkout).
    source = installed_from()
    assert commands(readme) == [
        f"{source.pip_install('sklearn')}  # scikit-learn for the template; [pytorch] for PyTorch",
        "onnxport build  # models/*.py -> onnxport-repository/",
        "onnxport serve  # http://127.0.0.1:8000/: the web app, the V2 API, the files",
        "onnxport import model.onnx --name mine  # an .onnx file of yours (or an ONNX test directory)",
        f"{source.pip_install('browser')}  # Playwright; the browsers are the system's",
        "onnxport check  # each served variant in each installed browser, against the server",
    ], readme
    recipes = discover(project / "models")
    assert load_recipe("example", recipes["example"]).name == "example"
    # What the README says to run, with the repository named (the checkout's default is models/.repository).
    repository = project / "onnxport-repository"
    code, out, err = run_cli("--repository", repository, "build", "--recipes", project / "models", "--forms", "none")
    assert code == 0, err
    entry = json.loads((repository / "manifest.json").read_text())["models"]["example"]
    assert entry["task"] == "classification"
    # The template shows what onnxport is for: smaller variants, each judged against fp32, not fp32 alone.
    served = {name for name, record in entry["variants"].items() if record["status"] == "ok"}
    assert {"fp32", "fp16"} <= served and served & {"int8-dynamic", "int8-static", "int8-weights", "int4"}, {
        name: record.get("reason") for name, record in entry["variants"].items()
    }
    table = _variant_table(out)
    for name in served:
        record = entry["variants"][name]
        row = table[name]
        assert row[2:4] == human_bytes(record["bytes"]).split(), row  # the size
        assert row[-2:] == [f"{record['accuracy']:.4f}", "ok"], row  # the accuracy on the golden labels, the verdict
        assert record["accuracy"] > 0.9, record
    # The example page it links runs the model the template built (the page's default would be the first served).
    assert links(readme) == ["http://127.0.0.1:8000/web/examples/index.html?model=example"], links(readme)


def _variant_table(out: str) -> dict[str, list[str]]:
    """The build's variant table (its first table), row by variant: the words of each row."""
    lines = out.split("\n\n")[0].splitlines()
    assert lines[0].split()[:3] == ["model", "variant", "size"], out
    return {line.split()[1]: line.split() for line in lines[2:]}


def test_the_init_readme_names_real_extras_of_a_wheel_not_a_package_index():
    """onnxport is on no package index: `pip install 'onnxport[sklearn]'` finds nothing. Every extra it names is
    one of pyproject.toml's; with no wheel recorded, the placeholder is said to be one."""
    wheel = Source("/home/me/dist/onnxport-0.1.0-py3-none-any.whl")
    for source in (installed_from(), wheel, Source(placeholder(), known=False)):
        text = readme("mine", source)
        assert "onnxport[" not in text, text
        named = set(re.findall(r"\[([a-z0-9_,-]+)\]", text))
        assert named and named <= EXTRAS, f"extras not in pyproject.toml: {named - EXTRAS}"
        pip = [c for c in commands(text) if c.startswith("pip ")]
        assert len(pip) == 2 and all(f"{source.location}[" in c for c in pip), pip
        assert (f"`{placeholder()}` below stands for the onnxport wheel you have" in text) == (not source.known)
    assert commands(readme("mine", wheel))[0].startswith(
        "pip install '/home/me/dist/onnxport-0.1.0-py3-none-any.whl[sklearn]'  #"
    )


def test_the_init_readme_says_what_another_origin_needs():
    text = readme("mine", installed_from())
    assert "`onnxport serve --cors-origins http://localhost:5173`" in text
    assert "`Failed to fetch dynamically imported module`" in text


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
    assert code == 2, "a folder named on the command line that is not there is a usage error"
    assert_one_line_error(err, f"--recipes {tmp_path / 'models'}: no such folder", "onnxport init DIR")
