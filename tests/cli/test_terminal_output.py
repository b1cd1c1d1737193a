"""What `onnxport build`, `import` and `info` print (server/onnxport/text_tables.py): tables without trailing
spaces, reasons summarized at a boundary in tables and whole in `info`, `--quiet`, where the golden and
calibration data came from, `import --description`, and the disk the variants and forms take."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from name_models import manifest_of, matmul_file
from onnxport.serving.app import create_app
from onnxport.text_tables import summary, table

MORE = "onnxport info m has it all"
# What a summary may end at in the full text (text_tables._SENTENCE_ENDS and _CLAUSE_ENDS).
BOUNDARIES = (". ", "; ", ", ", ": ", " - ")


def _summarized(status: str, reason: str) -> None:
    """A summarized reason is the start of the full one, cut where a sentence or clause ends."""
    kept, more = status.split(" … (", 1)
    assert more.endswith("has it all)"), status
    assert reason.startswith(kept), (kept, reason)
    rest = reason[len(kept) :]
    assert rest.startswith(BOUNDARIES) or rest[:1] in ".;:,", f"cut mid-clause: {kept!r} | {rest[:30]!r}"


# --------------------------------------------------------------------------- tables and summaries


def test_a_table_pads_no_line_with_trailing_spaces():
    text = table(["model", "status"], [["m", "ok"], ["m", "skipped: " + "x" * 250]])
    assert all(line == line.rstrip() for line in text.splitlines()), text
    assert max(len(line) for line in text.splitlines()) == len("m      skipped: ") + 250


CUBIC = (
    "conversion failed: Fail: [ONNXRuntimeError] : 1 : FAIL : Load model failed: Node (resize) Op (Resize) "
    "[ShapeInferenceError] ScalesValidation 'Cubic' mode only supports: * 'align_corners' false, "
    "* 'half_pixel' or 'pytorch_half_pixel' (scales 1, 1, 2, 2); the fallback kept nothing"
)


@pytest.mark.parametrize(
    "reason",
    [
        CUBIC,
        "int8 file 4,267 bytes is 1.84x the size of fp32 (2,313 bytes): not at least 1.5x smaller, so not worth serving",  # noqa: E501
        "output 'y' differs: " + "; ".join(f"set {i} (index {i}, {i + 1}) off by {i}.5" for i in range(12)),
    ],
)
def test_a_long_reason_is_summarized_at_a_boundary_never_inside_brackets(reason):
    text = summary(reason, MORE)
    assert len(reason) > 100 and text != reason
    _summarized(text, reason)
    kept = text.split(" … (")[0]
    assert kept.count("(") == kept.count(")") and kept.count("[") == kept.count("]"), kept
    assert len(kept) <= 100


def test_a_short_reason_and_a_long_first_clause_are_kept_whole():
    assert summary("too big", MORE) == "too big"
    words = "a" * 150 + " and nothing else"
    assert summary(words, MORE) == words  # no boundary: never cut mid-clause
    first = "b" * 130 + ", then more"
    assert summary(first, MORE) == "b" * 130 + f" … ({MORE})"


# --------------------------------------------------------------------------- import and info, as a user sees them


@pytest.fixture
def imported(run_cli, tmp_path):
    """`onnxport import` of a y = x @ W model (its fp16 and int8 skipped with long reasons), not quiet:
    (repository, stdout, stderr)."""
    repository = tmp_path / "repository"
    code, out, err = run_cli(
        "--repository", repository, "import", matmul_file(tmp_path / "models"), "--name", "m", "--forms", "all"
    )
    assert code == 0, err
    return repository, out, err


def test_the_import_summary_has_no_trailing_spaces_and_summarizes_long_reasons(imported):
    repository, out, _ = imported
    assert all(line == line.rstrip() for line in out.splitlines()), [ln for ln in out.splitlines() if ln != ln.rstrip()]
    variants = manifest_of(repository)["models"]["m"]["variants"]
    summarized = 0
    for line in out.splitlines():
        row = line.split()
        if row[:1] == ["m"] and row[1] in variants and variants[row[1]]["reason"]:
            status = line.split(f"{variants[row[1]]['status']}: ", 1)[1]
            if status != variants[row[1]]["reason"]:
                _summarized(status, variants[row[1]]["reason"])
                summarized += 1
    assert summarized >= 2, out  # fp16's and int8-dynamic's size reasons are past 100 characters


def test_info_prints_every_reason_in_full(run_cli, imported):
    repository, _, _ = imported
    code, out, err = run_cli("--repository", repository, "info", "m")
    assert code == 0, err
    assert all(line == line.rstrip() for line in out.splitlines())
    entry = manifest_of(repository)["models"]["m"]
    reasons = [r["reason"] for r in entry["variants"].values() if r.get("reason")]
    reasons += [f["reason"] for r in entry["variants"].values() for f in r.get("forms", {}).values() if f["reason"]]
    assert reasons, "the model has reasons to print"
    whole = out.split("why, in full:", 1)[1]
    for reason in reasons:
        assert reason in whole, reason


def test_the_import_says_the_disk_each_variant_and_form_takes_and_how_to_skip_forms(imported):
    repository, out, _ = imported
    record = manifest_of(repository)["models"]["m"]["variants"]["fp32"]
    files = {record["sha256"]: record["bytes"], **{f["sha256"]: f["bytes"] for f in record["forms"].values()}}
    assert sorted(record["forms"]) == ["basic", "ort"]
    disk = out.split("\n\n")[-1]
    header, _, row = disk.splitlines()[:3]
    assert header.split() == ["model", "variant", "as", "built", "ort", "form", "basic", "form", "total"]
    assert row.split()[:2] == ["m", "fp32"] and row.split()[-2:] == _bytes_text(sum(files.values())).split()
    assert f"on disk: {_bytes_text(sum(files.values()))} for 1 served variant" in disk
    assert "their optimized forms" in disk and "`onnxport import ... --forms none` makes none" in disk
    on_disk = sum(
        p.stat().st_size
        for p in (repository / "artifacts").iterdir()
        if p.stem in files and p.suffix in (".onnx", ".ort")
    )
    assert on_disk == sum(files.values())


def test_a_build_says_the_disk_too_and_which_forms_it_did_not_keep(run_cli, tmp_path, recipes_dir):
    code, out, err = run_cli("--repository", tmp_path / "r", "build", "--recipes", recipes_dir)
    assert code == 0, err
    disk = out.split("\n\n")[-1]
    assert disk.splitlines()[0].split()[:5] == ["model", "variant", "as", "built", "ort"], disk
    assert "on disk: " in disk and "not kept" in disk, disk  # a tiny model's forms start no sooner
    assert "`onnxport info NAME` says why" in disk


def _bytes_text(count: int) -> str:
    from onnxport.text_tables import human_bytes

    return human_bytes(count)


# --------------------------------------------------------------------------- --quiet


def test_quiet_prints_nothing_but_errors(run_cli, tmp_path, recipes_dir):
    # A model judged on synthetic inputs: its warning too is left out (info and the manifest say it).
    code, out, err = run_cli(
        "--repository",
        tmp_path / "r",
        "import",
        matmul_file(tmp_path / "models"),
        "--name",
        "m",
        "--quiet",
        "--forms",
        "none",
    )
    assert (code, out, err) == (0, "", "")
    code, out, err = run_cli(
        "--repository", tmp_path / "r", "build", "--quiet", "--forms", "none", "--recipes", recipes_dir
    )
    assert (code, out, err) == (0, "", "")
    code, out, err = run_cli("--repository", tmp_path / "r", "info", "m")
    assert code == 0 and "golden     synthetic" in out


# --------------------------------------------------------------------------- where the data came from


def test_info_says_where_an_imports_golden_and_calibration_data_came_from(run_cli, tmp_path):
    model = matmul_file(tmp_path / "models")
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "inputs.npz", x=rng.standard_normal((4, 8)).astype(np.float32))
    calibration = tmp_path / "calibration"
    calibration.mkdir()
    for index in range(3):
        np.savez(calibration / f"batch-{index}.npz", x=rng.standard_normal((2, 8)).astype(np.float32))
    code, _, err = run_cli(
        "--repository",
        tmp_path / "r",
        "import",
        model,
        "--name",
        "m",
        "--quiet",
        "--forms",
        "none",
        "--inputs",
        tmp_path / "inputs.npz",
        "--calibration",
        calibration,
    )
    assert code == 0, err
    code, out, err = run_cli("--repository", tmp_path / "r", "info", "m")
    assert code == 0, err
    lines = out.splitlines()
    assert (
        f"  golden     real: 1 set from --inputs {tmp_path / 'inputs.npz'}; expected outputs from fp32 "
        "onnxruntime" in lines
    ), out
    assert f"  calibration real: 3 batches from {calibration}" in lines, out


def test_info_says_where_a_recipes_golden_and_calibration_data_came_from(run_cli, tmp_path, recipes_dir):
    code, _, err = run_cli(
        "--repository", tmp_path / "r", "build", "--quiet", "--forms", "none", "--recipes", recipes_dir
    )
    assert code == 0, err
    code, out, err = run_cli("--repository", tmp_path / "r", "info", "tiny")
    assert code == 0, err
    entry = manifest_of(tmp_path / "r")["models"]["tiny"]
    assert (
        "  golden     real: the recipe tiny.py's golden inputs (1 set); expected outputs from the source "
        "framework" in out.splitlines()
    ), out
    calibration = next(line for line in out.splitlines() if line.startswith("  calibration "))
    assert calibration.startswith("  calibration real: the recipe tiny.py's calibration inputs ("), calibration
    assert entry["provenance"]["calibration_sha256"][:12] in calibration


# --------------------------------------------------------------------------- --description


def test_an_import_description_is_stored_shown_by_info_and_served_to_the_pages(run_cli, tmp_path):
    model = matmul_file(tmp_path / "models")
    text = "Saliency map of a photo, 224x224 RGB (ViT)"
    code, _, err = run_cli(
        "--repository",
        tmp_path / "r",
        "import",
        model,
        "--name",
        "m",
        "--quiet",
        "--forms",
        "none",
        "--description",
        f"  {text} ",
    )
    assert code == 0, err
    assert manifest_of(tmp_path / "r")["models"]["m"]["description"] == text
    code, out, _ = run_cli("--repository", tmp_path / "r", "info", "m")
    assert out.splitlines()[0] == f"m: {text}"
    pages = create_app({"repository": tmp_path / "r"}).test_client().get("/api/manifest")
    assert json.loads(pages.data)["models"]["m"]["description"] == text
    # Another description of the same file is another import: refused without --replace, then replaced.
    code, _, err = run_cli(
        "--repository",
        tmp_path / "r",
        "import",
        model,
        "--name",
        "m",
        "--quiet",
        "--forms",
        "none",
        "--description",
        "Something else",
    )
    assert code == 2 and "already in the repository" in err
    code, _, err = run_cli(
        "--repository",
        tmp_path / "r",
        "import",
        model,
        "--name",
        "m",
        "--quiet",
        "--forms",
        "none",
        "--description",
        "Something else",
        "--replace",
    )
    assert code == 0 and manifest_of(tmp_path / "r")["models"]["m"]["description"] == "Something else"


def test_without_a_description_the_import_says_where_it_came_from(run_cli, tmp_path):
    model = matmul_file(tmp_path / "models")
    code, _, err = run_cli("--repository", tmp_path / "r", "import", model, "--name", "m", "--quiet", "--forms", "none")
    assert code == 0, err
    assert re.fullmatch(r"Imported from matmul-0\.onnx", manifest_of(tmp_path / "r")["models"]["m"]["description"])
