"""`onnxport decoder GGUF FOLDER` (cli/decoder_commands.py) on what a user may type wrong: one stderr line naming
it, exit 2 for the command line and 1 for a file that is not a model, and nothing left at or beside FOLDER.
The export itself is tested in tests/convert/decoder/, SmolLM2's included."""

from __future__ import annotations


def test_a_missing_gguf_file_is_a_usage_error(run_cli, assert_one_line_error, tmp_path):
    code, out, err = run_cli("decoder", tmp_path / "nope.gguf", tmp_path / "out")
    assert code == 2
    assert_one_line_error(err, "nope.gguf", "no such file")
    assert not (tmp_path / "out").exists()


def test_a_file_that_is_not_gguf_by_name_is_refused(run_cli, assert_one_line_error, tmp_path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"not a gguf")
    code, _, err = run_cli("decoder", model, tmp_path / "out")
    assert code == 2
    assert_one_line_error(err, "model.onnx", "expected a .gguf file", ".onnx")


def test_an_existing_folder_is_not_overwritten(run_cli, assert_one_line_error, tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    code, _, err = run_cli("decoder", gguf, tmp_path / "out")
    assert code == 2
    assert_one_line_error(err, "already exists")
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_a_folder_whose_parent_is_missing_is_a_usage_error(run_cli, assert_one_line_error, tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    code, _, err = run_cli("decoder", gguf, tmp_path / "no" / "out")
    assert code == 2
    assert_one_line_error(err, str(tmp_path / "no"), "does not exist")


def test_a_broken_gguf_fails_in_one_line_and_leaves_nothing(run_cli, assert_one_line_error, tmp_path):
    gguf = tmp_path / "truncated.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 20)  # a GGUF header cut short
    code, out, err = run_cli("decoder", gguf, tmp_path / "out")
    assert code == 1
    assert_one_line_error(err, "truncated.gguf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["truncated.gguf"]  # no FOLDER, no partial folder
