"""The import contracts of pyproject.toml ([tool.importlinter]: the package's layers, convert's families, serving's
rooms, and who may import waitress and Flask): they hold, and they catch a backwards import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(project: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(project / "server")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(project / "pyproject.toml")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def package_copy(tmp_path) -> Path:
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        PROJECT_ROOT / "server" / "onnxport",
        tmp_path / "server" / "onnxport",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return tmp_path


def test_the_layers_are_kept(package_copy):
    done = lint(package_copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "backwards"),
    [
        ("serving/models/catalog.py", "from onnxport.convert import model_build"),  # the server must not need the build
        ("convert/model_build.py", "from onnxport.check import check_run as runner"),  # only cli imports check
        ("repository/store.py", "from onnxport.serving import config"),  # the store is below serving
        ("convert/intake/importer.py", "from onnxport.convert import variant_maker"),  # intake is below the variants
        ("convert/fp16/plan.py", "from onnxport.convert.int8 import prep"),  # the families stand apart
        ("serving/ray/replicas.py", "from waitress.server import create_server"),  # only the adapter imports waitress
        ("serving/v2/core.py", "from flask import current_app"),  # the V2 core needs no web framework
        ("serving/models/sessions.py", "from onnxport.serving.http import context"),  # nor through http/
        ("cli/serve_commands.py", "import flask"),  # only http/ and the app factory import Flask
    ],
)
def test_a_backwards_import_breaks_the_contract(package_copy, module, backwards):
    path = package_copy / "server" / "onnxport" / module
    path.write_text(path.read_text() + f"\n{backwards}  # added by the test\n")
    done = lint(package_copy)
    assert done.returncode != 0, done.stdout
    assert "BROKEN" in done.stdout and module.replace("/", ".").removesuffix(".py") in done.stdout, done.stdout
