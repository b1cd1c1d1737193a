"""`export triton|kserve OUT` and `deploy ray --out OUT` with OUT a symbolic link: one line, exit 2.

The attack: OUT a link to an empty folder (or a dangling link) passed the "new or empty folder" check,
and the final rename failed with a NotADirectoryError traceback. Now a link is refused before any
work, saying what was expected, and nothing is written anywhere.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

COMMANDS = {
    "export triton": lambda out: ["export", "triton", out],
    "export kserve": lambda out: ["export", "kserve", out, "--storage-uri", "s3://bucket/models"],
    "deploy ray": lambda out: ["deploy", "ray", "--out", out, "--image", "example/onnxport:1"],
}


def relu() -> onnx.ModelProto:
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "relu",
        [value("x", TensorProto.FLOAT, ["n", 4])],
        [value("y", TensorProto.FLOAT, ["n", 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("target", ["an empty folder", "nowhere", "a folder with a file"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_symlinked_out_is_one_line_and_writes_nothing(
    tmp_path, imported_repository, run_cli, assert_one_line_error, command, target
):
    repository = imported_repository(relu(), "relu")
    place = tmp_path / "place"
    place.mkdir()
    if target != "nowhere":
        (place / "target").mkdir()
        if target == "a folder with a file":
            (place / "target" / "keep.txt").write_text("mine")
    out = place / "out"
    out.symlink_to("target")
    before = listing(place)
    code, stdout, err = run_cli("--repository", repository, *COMMANDS[command](out))
    assert code == 2, err
    assert_one_line_error(err, str(out), "symbolic link", "to target", "a new folder or an empty real folder")
    assert stdout == ""
    assert listing(place) == before, "nothing written through the link or beside it"
    assert out.is_symlink()


def test_a_real_empty_folder_still_works(tmp_path, imported_repository, run_cli):
    repository = imported_repository(relu(), "relu")
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli("--repository", repository, "export", "triton", out)
    assert code == 0, err
    assert (out / "relu" / "1" / "model.onnx").is_file()


def test_a_file_in_the_path_is_one_line(tmp_path, imported_repository, run_cli, assert_one_line_error):
    repository = imported_repository(relu(), "relu")
    (tmp_path / "file").write_text("not a folder")
    code, _, err = run_cli("--repository", repository, "export", "triton", tmp_path / "file" / "out")
    assert code == 2, err
    assert_one_line_error(err, "cannot make its parent folder", "expected a path under a folder")
