"""The pip line for an extra names what pip recorded this package came from (direct_url.json), never a package
index name onnxport does not have; each test installs a real dist-info folder on sys.path and reads it back."""

from __future__ import annotations

import json
import subprocess

import pytest

from onnxport.install_source import installed_from, placeholder

NAME = "onnxport-install-source-probe"


@pytest.fixture
def dist_info(tmp_path, monkeypatch):
    """dist_info(direct_url or None): a dist-info folder of NAME on sys.path, as pip writes one."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(direct_url: dict | None) -> None:
        folder = tmp_path / f"{NAME.replace('-', '_')}-0.1.0.dist-info"
        folder.mkdir(exist_ok=True)
        (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: 0.1.0\n")
        if direct_url is not None:
            (folder / "direct_url.json").write_text(json.dumps(direct_url))

    return write


def test_a_wheel_file_still_there_is_named_and_the_line_runs_in_a_shell(dist_info, tmp_path):
    wheel = tmp_path / "my dist" / "onnxport-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    dist_info({"url": wheel.as_uri(), "archive_info": {"hashes": ["sha256=00"]}})
    source = installed_from(NAME)
    assert source.known and source.location == str(wheel)
    line = source.pip_install("sklearn")
    assert line == f"pip install '{wheel}[sklearn]'"
    # The shell hands pip one argument, the path with its extra: what `pip install` parses.
    echoed = subprocess.run(
        ["sh", "-c", line.replace("pip install", "printf '%s\\n'", 1)], capture_output=True, text=True, check=True
    ).stdout
    assert echoed.splitlines() == [f"{wheel}[sklearn]"]


def test_a_folder_install_keeps_its_editable_flag(dist_info, tmp_path):
    dist_info({"url": tmp_path.as_uri(), "dir_info": {"editable": True}})
    assert installed_from(NAME).pip_install("browser") == f"pip install -e '{tmp_path}[browser]'"


def test_a_remote_url_uses_the_name_at_url_form(dist_info):
    dist_info({"url": "https://files.example/onnxport-0.1.0-py3-none-any.whl", "archive_info": {}})
    assert installed_from(NAME).pip_install("ray") == (
        "pip install 'onnxport[ray] @ https://files.example/onnxport-0.1.0-py3-none-any.whl'"
    )


@pytest.mark.parametrize(
    "direct_url",
    [None, {"url": "file:///nowhere/onnxport-0.1.0-py3-none-any.whl", "archive_info": {}}],
    ids=["none recorded", "file gone"],
)
def test_without_a_file_on_disk_the_line_names_the_placeholder(dist_info, direct_url):
    dist_info(direct_url)
    source = installed_from(NAME)
    assert not source.known
    assert source.pip_install("sklearn") == "pip install 'path/to/onnxport-0.1.0-py3-none-any.whl[sklearn]'"


def test_a_package_not_installed_at_all_gets_the_placeholder():
    source = installed_from("onnxport-no-such-distribution")
    assert not source.known and source.location == placeholder("onnxport-no-such-distribution")
