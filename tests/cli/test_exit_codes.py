"""Exit codes of every command (docs/guide/build-and-import.md, "Exit codes"): 2 for a usage error, what was typed
not fitting (an option, a name, a file or folder named on the command line), before any work and with one
error line; 1 for a failure of the work; 0 otherwise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from name_models import matmul_file
from onnxport import cli
from onnxport.check import check_run
from onnxport.harness import process

IMAGE = "example.org/onnxport:1"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A repository holding one imported model, `mm` (fp32 only, no forms), and the model's file."""
    root = tmp_path_factory.mktemp("served")
    model = matmul_file(root / "models")
    code = cli.main(
        ["--repository", str(root / "repository"), "import", str(model), "--name", "mm", "--quiet", "--forms", "none"]
    )
    assert code == 0, "importing the matmul model failed; see the captured stderr"
    return root / "repository", model


@pytest.fixture
def work(tmp_path, served, monkeypatch):
    """Files the cases name (each case gets its own), and no server or browser may start. No engine is installed
    (an empty PATH): the command line's mistake is said before what this machine lacks, on any machine."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(check_run, "running_server", lambda *a, **k: pytest.fail("a server started"))
    monkeypatch.setattr(process, "running_server", lambda *a, **k: pytest.fail("a server started"))
    (tmp_path / "notes.onnx").write_text("these are not the bytes of a model\n")
    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file.txt").write_text("mine")
    (tmp_path / "recipes.txt").write_text("not a folder")
    return {"repo": served[0], "model": served[1], "tmp": tmp_path}


def _args(template: list[str], work: dict) -> list[str]:
    return [part.format(**work) for part in template]


# (command line, what the one error line says). {repo}: the served repository, {model}: its model file,
# {tmp}: this case's folder.
USAGE_ERRORS = {
    "no-command": (["--repository", "{repo}", "nosuch"], "invalid choice"),
    "import-no-name": (["--repository", "{repo}", "import", "{model}"], "--name"),
    "import-missing-model": (
        ["--repository", "{tmp}/r", "import", "{tmp}/nowhere.onnx", "--name", "x"],
        "nowhere.onnx: no such file or folder",
    ),
    "import-not-onnx": (
        ["--repository", "{tmp}/r", "import", "{tmp}/notes.onnx", "--name", "x", "--quiet"],
        "not an ONNX model",
    ),
    "import-empty-file": (
        ["--repository", "{tmp}/r", "import", "{tmp}/empty.onnx", "--name", "x", "--quiet"],
        "is empty",
    ),
    "import-folder-without-model": (
        ["--repository", "{tmp}/r", "import", "{tmp}/folder", "--name", "x"],
        "must contain model.onnx",
    ),
    "import-missing-inputs": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--inputs", "{tmp}/in.npz"],
        "--inputs {tmp}/in.npz: no such file or folder",
    ),
    "import-missing-calibration": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--calibration", "{tmp}/cal.npz"],
        "--calibration {tmp}/cal.npz: no such file or folder",
    ),
    "import-pipeline-folder": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--pipeline", "{tmp}/folder"],
        "--pipeline {tmp}/folder: is a folder; expected a file",
    ),
    "import-missing-asset": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--asset", "{tmp}/tokenizer.json"],
        "--asset {tmp}/tokenizer.json: no such file",
    ),
    "import-bad-name": (["--repository", "{tmp}/r", "import", "{model}", "--name", "../x"], "--name '../x'"),
    "import-taken-name": (
        ["--repository", "{repo}", "import", "{model}", "--name", "mm", "--task", "regression"],
        "already in the repository",
    ),
    "import-bad-forms": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--forms", "tiny"],
        "unknown form 'tiny'",
    ),
    "import-unknown-task": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--task", "segmentation"],
        "import: argument --task: invalid choice: 'segmentation'",
    ),
    "import-bad-max-nodes": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--max-nodes", "many"],
        "--max-nodes 'many'",
    ),
    "import-two-line-description": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--description", "one\ntwo"],
        "has '\\n', which is not printable",
    ),
    "import-long-description": (
        ["--repository", "{tmp}/r", "import", "{model}", "--name", "x", "--description", "d" * 201],
        "201 characters, more than 200",
    ),
    "build-missing-recipes": (
        ["--repository", "{tmp}/r", "build", "--recipes", "{tmp}/nowhere"],
        "--recipes {tmp}/nowhere: no such folder",
    ),
    "build-recipes-file": (
        ["--repository", "{tmp}/r", "build", "--recipes", "{tmp}/recipes.txt"],
        "is a file; expected a folder",
    ),
    "build-unknown-recipe": (
        ["--repository", "{tmp}/r", "build", "--recipes", "{tmp}/folder", "nosuch"],
        "unknown model 'nosuch'",
    ),
    "info-unknown": (["--repository", "{repo}", "info", "ghost"], "unknown model 'ghost'; the repository has: mm"),
    "remove-unknown": (["--repository", "{repo}", "remove", "ghost"], "no model 'ghost'"),
    "check-unknown-model": (
        ["--repository", "{repo}", "check", "ghost", "--browsers", "chromium"],
        "unknown model 'ghost'; the repository has: mm",
    ),
    "check-unknown-runtime": (
        ["--repository", "{repo}", "check", "--runtimes", "cuda", "--browsers", "chromium"],
        "unknown runtime 'cuda'",
    ),
    "check-unknown-browser": (["--repository", "{repo}", "check", "--browsers", "safari"], "unknown browser 'safari'"),
    "check-missing-browser-file": (
        ["--repository", "{repo}", "check", "--browsers", "chromium", "--browser", "{tmp}/no-chromium"],
        "--browser {tmp}/no-chromium: no such file",
    ),
    "check-missing-tolerances": (
        ["--repository", "{repo}", "check", "--browsers", "chromium", "--tolerances", "{tmp}/t.json"],
        "--tolerances {tmp}/t.json: no such file",
    ),
    "check-url-and-locate": (
        ["--repository", "{repo}", "check", "--browsers", "chromium", "--url", "http://127.0.0.1:9", "--locate"],
        "drop --url",
    ),
    "check-report-folder-missing": (
        ["--repository", "{repo}", "check", "--browsers", "chromium", "--json", "{tmp}/no/report.json"],
        "does not exist; create it first",
    ),
    "bench-unknown-model": (["--repository", "{repo}", "bench", "ghost", "--runtimes", ""], "unknown model 'ghost'"),
    # Refused at once: a server on an empty repository is never ready (a 60 s wait, then its log, before).
    "bench-empty-repository": (["--repository", "{tmp}/r", "bench", "--runtimes", ""], "no models in the repository"),
    "check-empty-repository": (
        ["--repository", "{tmp}/r", "check", "--browsers", "chromium"],
        "no models in the repository",
    ),
    "bench-unknown-browser": (["--repository", "{repo}", "bench", "--browsers", "safari"], "unknown browser 'safari'"),
    "bench-bad-replicas": (
        ["--repository", "{repo}", "bench", "--runtimes", "", "--engine", "ray", "--replicas", "0"],
        "--replicas '0'",
    ),
    "serve-bad-port": (["--repository", "{repo}", "serve", "--port", "99999"], "--port '99999'"),
    "export-existing-folder": (["--repository", "{repo}", "export", "triton", "{tmp}/taken"], "already exists"),
    "export-kserve-bad-uri": (
        ["--repository", "{repo}", "export", "kserve", "{tmp}/out", "--storage-uri", "bucket"],
        "--storage-uri 'bucket'",
    ),
    "deploy-ray-bad-autoscale": (
        ["--repository", "{repo}", "deploy", "ray", "--out", "{tmp}/ray", "--autoscale", "4:1", "--image", IMAGE],
        "--autoscale '4:1'",
    ),
    "init-folder-with-files": (["init", "{tmp}/taken"], "new or empty folder"),
}


@pytest.mark.parametrize("case", list(USAGE_ERRORS))
def test_every_usage_error_exits_2_with_one_line_before_any_work(run_cli, assert_one_line_error, work, case):
    template, says = USAGE_ERRORS[case]
    args = _args(template, work)
    before = (work["repo"] / "manifest.json").read_bytes()
    code, out, err = run_cli(*args)
    assert code == 2, f"{case}: exit {code}\n{err}"
    # argparse's own errors too (no-command, import-no-name, import-bad-forms, import-unknown-task): one line, no
    # usage lines first (cli/parser.py OneLineParser).
    assert_one_line_error(err, says.format(**work))
    assert out == "", out
    assert (work["repo"] / "manifest.json").read_bytes() == before
    # Nothing written: at most the empty lock file of an import whose file was read inside its transaction.
    assert [p.name for p in (work["tmp"] / "r").rglob("*")] in ([], [".lock"]), "a usage error wrote files"


WORK_FAILURES = {
    # The file is ONNX, but onnxruntime's opsets end long before 99: the import's work fails on it.
    "import-unsupported-opset": "unsupported opset 99",
    # A recipe is code: its crash is the build's failure, not a usage error.
    "build-recipe-crashes": "the data set is gone",
    # The repository (not the command line) is broken.
    "info-corrupt-manifest": "not readable JSON",
}


@pytest.mark.parametrize("case", list(WORK_FAILURES))
def test_a_failure_of_the_work_exits_1(run_cli, assert_one_line_error, tmp_path, write_recipe, case):
    repository = tmp_path / "r"
    if case == "import-unsupported-opset":
        path = tmp_path / "future.onnx"
        model = onnx.load(str(matmul_file(tmp_path / "models")))
        model.opset_import[0].version = 99
        onnx.save(model, path)
        args = ["import", path, "--name", "future", "--quiet"]
    elif case == "build-recipe-crashes":
        path = write_recipe("bad", LOAD_ERROR='RuntimeError("the data set is gone")')
        args = ["build", "--quiet", "--recipes", path.parent, "bad"]
    else:
        repository.mkdir()
        (repository / "manifest.json").write_text("{not json")
        args = ["info", "anything"]
    code, _, err = run_cli("--repository", repository, *args)
    assert code == 1, err
    assert_one_line_error(err, WORK_FAILURES[case])


def test_the_process_exit_code_is_the_one_documented(tmp_path):
    """The installed command, not only main()'s return: a missing model path exits 2, one line."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(tmp_path / "r"),
            "import",
            str(tmp_path / "missing.onnx"),
            "--name",
            "m",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"onnxport: error: {tmp_path / 'missing.onnx'}: no such file or folder"]
    assert done.stdout == ""


def test_the_docs_table_names_every_exit_code():
    text = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "build-and-import.md").read_text()
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 130 |"):
        assert code in section, f"docs/guide/build-and-import.md's exit code table has no row {code}"
