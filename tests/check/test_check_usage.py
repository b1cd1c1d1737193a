"""`onnxport check` refusing bad input in one error line (models, runtimes, options, files, browser); relative paths."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from fixtures.check import RUNTIMES
from onnxport.check import check_run as runner
from onnxport.harness import process

pytestmark = pytest.mark.slow


def test_an_unknown_model_is_one_error_line_naming_it(check_cli, demo_repository, assert_one_line_error):
    code, out, err = check_cli("--repository", demo_repository, "check", "iris", "no-such-model", "--runtimes", "wasm")
    assert code == 2
    assert_one_line_error(err, "unknown model 'no-such-model'", "digits, iris, minilm")
    assert out == ""


@pytest.mark.parametrize("runtimes", ["cuda", "wasm,webgl", "wasm,,wasm-2t"])
def test_an_unknown_runtime_is_one_error_line_naming_it(check_cli, demo_repository, assert_one_line_error, runtimes):
    bad = [r for r in runtimes.split(",") if r and r not in RUNTIMES][0]
    code, out, err = check_cli("--repository", demo_repository, "check", "--runtimes", runtimes)
    assert code == 2
    assert_one_line_error(err, f"unknown runtime '{bad}'", "wasm, wasm-1t, webgpu")
    assert out == ""


@pytest.mark.parametrize("option", [["--locate"], ["--tolerances", "t.json"]], ids=["locate", "tolerances"])
def test_url_with_options_needing_the_checks_own_server_is_an_error(
    check_cli, demo_repository, assert_one_line_error, tmp_path, option
):
    (tmp_path / "t.json").write_text("{}")
    code, out, err = check_cli("--repository", demo_repository, "check", "--url", "http://127.0.0.1:9", *option)
    assert code == 2
    assert_one_line_error(err, "--url", option[0])


def test_a_bad_tolerances_file_fails_before_anything_starts(
    check_cli, demo_repository, assert_one_line_error, tmp_path, monkeypatch
):
    started = []
    monkeypatch.setattr(runner, "running_server", lambda *a, **k: started.append(a) or pytest.fail("server started"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"fp32/tpu": {"abs": 1}}))
    code, _, err = check_cli("--repository", demo_repository, "check", "--tolerances", bad)
    assert code == 2
    assert_one_line_error(err, str(bad), "'fp32/tpu'")
    assert not started


def test_a_missing_browser_is_one_error_line_naming_it(check_cli, repository_copy, assert_one_line_error, tmp_path):
    repository = repository_copy(["iris"])
    missing = tmp_path / "no-chromium"
    code, out, err = check_cli("--repository", repository, "check", "--runtimes", "wasm", "--browser", missing)
    assert code == 2
    assert_one_line_error(err, str(missing))


def test_a_relative_repository_is_the_callers(check_cli, repository_copy, tmp_path, monkeypatch):
    repository = repository_copy(["iris"])  # tmp_path/repository-0; the working folder is tmp_path
    assert Path.cwd() == tmp_path and repository.parent == tmp_path
    # The 60 s readiness wait, shortened so that the failure is quick.
    monkeypatch.setattr(runner, "running_server", functools.partial(process.running_server, timeout=15))
    code, out, err = check_cli("--repository", repository.name, "check", "iris", "--runtimes", "wasm")
    assert code == 0, err


@pytest.mark.parametrize("command", ["check", "bench"])
@pytest.mark.parametrize(
    "where, says",
    [
        ("missing/report.json", "the folder {tmp}/missing does not exist; create it first"),
        (".", "is a folder; expected a file name, e.g. {tmp}/report.json"),
    ],
    ids=["no-folder", "a-folder"],
)
def test_a_report_file_that_cannot_be_written_is_refused_before_any_work(
    run_cli, assert_one_line_error, tmp_path, monkeypatch, command, where, says
):
    """Found before minutes of measurement, not after them (a traceback once, past a check's last row)."""
    monkeypatch.setattr(runner, "running_server", lambda *a, **k: pytest.fail("a server started"))
    from onnxport.bench import bench_run

    monkeypatch.setattr(bench_run, "run_bench", lambda *a, **k: pytest.fail("a bench started"))
    path = tmp_path / where if where != "." else tmp_path
    code, out, err = run_cli(
        "--repository", tmp_path / "repository", command, "--json", path, "--runtimes", "wasm", "--browsers", "chromium"
    )
    assert code == 2
    assert_one_line_error(err, f"--json {path}: " + says.format(tmp=tmp_path))
    assert out == ""
