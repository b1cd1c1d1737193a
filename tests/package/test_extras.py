"""The core imports no extra, and a command that needs a missing extra says which one in one line."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from onnxport.extras import EXTRAS
from onnxport.install_source import installed_from

# The serve, import, variant and V2 paths, as the CLI and the server reach them.
CORE_PATHS = [
    "onnxport.cli",
    "onnxport.serving.app",
    "onnxport.serving.waitress.serve",
    "onnxport.serving.v2.core",
    "onnxport.convert.intake.importer",
    "onnxport.convert.build_transaction",
    "onnxport.convert.fp16",
    "onnxport.convert.int8",
    "onnxport.convert.forms",
    "onnxport.repository.store",
    "onnxport.deploy.triton",
    "onnxport.deploy.ray_config",
]


def test_the_core_paths_import_no_extra(tmp_path):
    script = textwrap.dedent(f"""
        import importlib, sys
        for name in {CORE_PATHS!r}:
            importlib.import_module(name)
        from onnxport.serving.app import create_app
        create_app({{"repository": {str(tmp_path / "repository")!r}}})
        from onnxport import cli
        cli.build_parser()
        print(sorted(m for m in sys.modules if m.split(".")[0] in {sorted(EXTRAS)!r}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"extras imported on the core paths: {done.stdout}"


def test_build_without_scikit_learn_names_the_extra(run_cli, tmp_path, assert_one_line_error):
    assert run_cli("init", tmp_path / "project")[0] == 0
    # A fresh interpreter in which scikit-learn cannot be imported, as in an environment without the extra. In this
    # process earlier tests may have imported sklearn's submodules, which a blocked top-level name does not hide.
    script = textwrap.dedent(f"""
        import sys
        sys.modules["sklearn"] = sys.modules["skl2onnx"] = None
        from onnxport import cli
        sys.exit(cli.main(["--repository", {str(tmp_path / "repository")!r}, "build",
                           "--recipes", {str(tmp_path / "project" / "models")!r}, "--quiet"]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    # The pip line names what this onnxport came from (here the checkout); `onnxport[sklearn]` is on no index.
    assert_one_line_error(done.stderr, f"onnxport build needs scikit-learn: {installed_from().pip_install('sklearn')}")
    assert "'onnxport[" not in done.stderr


@pytest.mark.parametrize("command", ["check", "bench"])
def test_check_and_bench_without_playwright_name_the_extra_before_starting(
    command, run_cli, tmp_path, monkeypatch, assert_one_line_error
):
    monkeypatch.setitem(sys.modules, "playwright", None)
    code, _, err = run_cli("--repository", tmp_path / "nothing", command)
    assert code == 1
    assert_one_line_error(err, f"onnxport {command} needs Playwright: {installed_from().pip_install('browser')}")
    assert not (tmp_path / "nothing").exists()
