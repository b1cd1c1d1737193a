"""The words of the CLI's tables and errors, read as a user reads them: a 4-bit file called a 4-bit file, an
already-int8 model's reference called what it is (it has no fp32), "unchanged" for a model not rebuilt (skipped
means not made), `info` not pointing at itself, singulars, a 4-bit file that gained nothing said so, and a file
that is no model named for what it is."""

from __future__ import annotations

import copy
import gzip
import zipfile

import numpy as np
import pytest

from int8_models import quantized_file
from name_models import manifest_of
from onnxport.text_tables import human_bytes, variant_rows


def _row(out: str, model: str, variant: str) -> str:
    """The status cell of a model's variant in the first table of `out`."""
    line = next(line for line in out.splitlines() if line.split()[:2] == [model, variant])
    return line.split("  ")[-1].strip()


# --------------------------------------------------------------------------- a recipe's build


@pytest.fixture
def built(run_cli, tmp_path, recipes_dir):
    """The tiny recipe built (int4 made but not 1.5x smaller than fp32): (repository, the build's stdout)."""
    code, out, err = run_cli("--repository", tmp_path / "r", "build", "--recipes", recipes_dir, "--forms", "none")
    assert code == 0, err
    return tmp_path / "r", out


def test_int4s_size_refusal_speaks_of_the_4_bit_file(built):
    repository, out = built
    reason = manifest_of(repository)["models"]["tiny"]["variants"]["int4"]["reason"]
    assert reason.startswith("4-bit (int4) file ") and "the size of fp32" in reason, reason
    assert _row(out, "tiny", "int4").startswith("skipped: 4-bit (int4) file "), out


def test_a_rebuild_says_unchanged_not_skipped(run_cli, built, recipes_dir):
    repository, _ = built
    code, out, err = run_cli("--repository", repository, "build", "--recipes", recipes_dir, "--forms", "none")
    assert code == 0, err
    assert _row(out, "tiny", "fp32") == "ok (unchanged, not rebuilt)", out
    assert "skipped" not in _row(out, "tiny", "fp16"), out
    assert _row(out, "tiny", "int4").startswith("skipped: 4-bit") and _row(out, "tiny", "int4").endswith(
        "(unchanged, not rebuilt)"
    ), out


def test_info_summarizes_a_long_reason_pointing_below_not_at_itself(run_cli, built):
    repository, _ = built
    code, out, err = run_cli("--repository", repository, "info", "tiny")
    assert code == 0, err
    assert "has it all" not in out and "(in full below)" in _row(out, "tiny", "int4"), out
    reason = manifest_of(repository)["models"]["tiny"]["variants"]["int4"]["reason"]
    assert f"  int4 skipped: {reason}" in out.split("why, in full:", 1)[1].splitlines()


def test_a_4_bit_file_not_meaningfully_smaller_than_int8_weights_is_said_to_have_gained_nothing(built):
    repository, _ = built
    entry = copy.deepcopy(manifest_of(repository)["models"]["tiny"])
    fp16 = entry["variants"]["fp16"]  # a served record, as a model with both 4- and 8-bit weights has them
    entry["variants"]["int8-weights"] = {**fp16, "label": "int8-weights", "bytes": 805_581}
    entry["variants"]["int4"] = {**fp16, "label": "int4", "bytes": 805_069}  # 786.2 KB beside 786.7 KB
    status = dict((row[1], row[-1]) for row in variant_rows("tiny", entry))
    assert status["int4"] == ("ok: 4 bits gained nothing: 786.2 KB against int8-weights' 786.7 KB (1.00x)"), status
    assert status["int8-weights"] == "ok"
    entry["variants"]["int4"]["bytes"] = 500_000  # 0.62x: what 4 bits are for
    assert dict((row[1], row[-1]) for row in variant_rows("tiny", entry))["int4"] == "ok"
    assert human_bytes(805_069) == "786.2 KB"


# --------------------------------------------------------------------------- an already-int8 model, imported


def test_an_already_int8_model_is_compared_with_the_original_not_an_fp32_it_does_not_have(run_cli, tmp_path):
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, x=np.random.default_rng(8).normal(size=(6, 64)).astype(np.float32))
    code, out, err = run_cli(
        "--repository",
        tmp_path / "r",
        "import",
        quantized_file(tmp_path),
        "--name",
        "q",
        "--inputs",
        inputs,
        "--forms",
        "none",
    )
    assert code == 0, err
    variants = manifest_of(tmp_path / "r")["models"]["q"]["variants"]
    assert variants["fp32"]["label"] == "original (int8)"
    fp16 = variants["fp16"]["reason"]
    assert fp16.startswith("fp16 file ") and "the size of the original (int8) file (" in fp16, fp16
    assert "fp32" not in fp16, fp16
    assert _row(out, "q", "fp16").startswith("skipped: fp16 file "), out
    code, out, err = run_cli("--repository", tmp_path / "r", "info", "q")
    assert code == 0, err
    golden = next(line for line in out.splitlines() if line.startswith("  golden "))
    assert golden == (
        f"  golden     real: 1 set from --inputs {inputs}; expected outputs from onnxruntime running "
        "the file as given (it computes in int8; there is no fp32 model)"
    ), golden


def test_a_float_imports_reference_is_fp32_onnxruntime_and_sets_are_counted(run_cli, tmp_path):
    from name_models import matmul_file

    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **{"0/x": np.ones((2, 8), np.float32), "1/x": np.zeros((2, 8), np.float32)})
    code, _, err = run_cli(
        "--repository",
        tmp_path / "r",
        "import",
        matmul_file(tmp_path / "m"),
        "--name",
        "m",
        "--inputs",
        inputs,
        "--quiet",
        "--forms",
        "none",
    )
    assert code == 0, err
    code, out, _ = run_cli("--repository", tmp_path / "r", "info", "m")
    assert (
        f"  golden     real: 2 sets from --inputs {inputs}; expected outputs from fp32 onnxruntime" in out.splitlines()
    ), out


# --------------------------------------------------------------------------- a file that is no model


def _wheel(path):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("thing-1.0.dist-info/METADATA", "Name: thing\n")


def _checkpoint(path):
    with zipfile.ZipFile(path, "w") as archive:  # what torch.save writes: a zip holding archive/data.pkl
        archive.writestr("archive/data.pkl", b"\x80\x02}q\x00.")


def _npz(path):
    with open(path, "wb") as handle:
        np.savez(handle, x=np.zeros(3, np.float32))


FILES = {
    "thing-1.0-py3-none-any.whl": (_wheel, "a Python wheel (a zip archive)"),
    "model.pt": (_checkpoint, "a PyTorch checkpoint (a zip archive; export the model with torch.onnx.export"),
    "inputs.npz": (_npz, "a NumPy .npz archive"),
    "digit.png": (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64)), "a PNG image"),
    "photo.jpg": (lambda p: p.write_bytes(b"\xff\xd8\xff\xe0" + bytes(64)), "a JPEG image"),
    "model.onnx.gz": (lambda p: p.write_bytes(gzip.compress(b"\x08\x07" * 50)), "a gzip archive"),
    "paper.pdf": (lambda p: p.write_bytes(b"%PDF-1.7\n" + bytes(64)), "a PDF document"),
    "config.json": (lambda p: p.write_text('{"hidden_size": 384}'), "a JSON document"),
    "saved.onnx": (lambda p: p.write_text("<!DOCTYPE html><html><body>Not found</body></html>"), "an HTML page"),
    "notes.onnx": (lambda p: p.write_text("these are not the bytes of a model\n"), "a text file"),
}


@pytest.mark.parametrize("name", list(FILES))
def test_a_file_that_is_no_model_is_named_for_what_it_is(run_cli, assert_one_line_error, tmp_path, name):
    write, what = FILES[name]
    path = tmp_path / name
    write(path)
    code, out, err = run_cli("--repository", tmp_path / "r", "import", path, "--name", "x", "--quiet")
    assert code == 2, err
    assert_one_line_error(err, f"{path}: {what}", "not an ONNX model", "expected an ONNX model (.onnx")
    assert "parse failed" not in err and "Wire format" not in err, err
