"""Optimized forms of the served variants (server/onnxport/convert/forms/, docs/reference/manifest.md "forms"):
their files, their measurements against fp32 and the variant, and the build's `--forms` choice."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnxruntime as ort
import pytest

from onnxport import tensor_json

pytestmark = pytest.mark.slow


def served(manifest: dict):
    for model, entry in manifest["models"].items():
        for variant, record in entry["variants"].items():
            if record["status"] == "ok":
                yield model, variant, record


def test_every_served_variant_has_its_forms_and_each_is_a_real_file_with_its_own_reference(
    demo_repository,
    demo_manifest,
):
    for model, variant, record in served(demo_manifest):
        expected = {"ort", "basic"} | ({"fused"} if (model, variant) == ("minilm", "fp32") else set())
        if (model, variant) == ("minilm", "int4"):  # int4 embedding tables: the ORT format has no 4-bit type
            expected -= {"ort"}
        assert set(record["forms"]) == expected, (model, variant)
        for name, form in record["forms"].items():
            where = f"{model} {variant} {name}"
            assert form["status"] == "ok" and form["reason"] is None, (where, form.get("reason"))
            data = (demo_repository / form["file"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == form["sha256"] and len(data) == form["bytes"], where
            assert form["file"].endswith(".ort" if form["format"] == "ort" else ".onnx"), where
            assert form["sha256"] != record["sha256"], f"{where}: the same bytes as the variant"
            assert form["runtimes"] == (["wasm", "wasm-1t"] if name == "ort" else None), where
            assert form["reference"]["file"] != record["reference"]["file"], where
            # Within the variant's budget against fp32, and the optimizations change next to nothing.
            for output, errors in form["vs_variant"]["outputs"].items():
                assert errors["max_abs"] <= 1e-3 * max(errors["scale"], 1.0), (where, output, errors)


def test_a_form_runs_natively_to_its_reference_outputs(demo_repository, demo_manifest):
    form = demo_manifest["models"]["minilm"]["variants"]["int8-dynamic"]["forms"]["ort"]
    reference = json.loads((demo_repository / form["reference"]["file"]).read_text())
    assert reference["form"] == "ort" and reference["variant"] == "int8-dynamic"
    session = ort.InferenceSession(str(demo_repository / form["file"]), providers=["CPUExecutionProvider"])
    ran = session.run(None, tensor_json.decode(reference["inputs"]))
    outputs = dict(zip([o.name for o in session.get_outputs()], ran))
    for name, expected in tensor_json.decode(reference["outputs"]).items():
        np.testing.assert_array_equal(outputs[name], expected)


def test_the_fused_form_says_what_it_fused(demo_manifest):
    fused = demo_manifest["models"]["minilm"]["variants"]["fp32"]["forms"]["fused"]
    assert fused["optimization"] == "transformer" and fused["fusions"].get("SkipLayerNormalization", 0) > 0
    operators = fused["operators"].get("com.microsoft.SkipLayerNormalization", 0)
    assert operators == fused["fusions"]["SkipLayerNormalization"]


def test_build_forms_none_makes_no_forms_and_a_list_makes_only_those(run_cli, tmp_path):
    repository = tmp_path / "repository"
    code, _, err = run_cli("--repository", repository, "build", "iris", "--quiet", "--forms", "none")
    assert code == 0, err
    manifest = json.loads((repository / "manifest.json").read_text())
    assert [record["forms"] for _, _, record in served(manifest)] == [{}, {}]
    files = len(list((repository / "artifacts").iterdir()))

    # Another choice of forms is another build key: iris is built again, not skipped.
    code, _, err = run_cli("--repository", repository, "build", "iris", "--quiet", "--forms", "basic")
    assert code == 0, err
    manifest = json.loads((repository / "manifest.json").read_text())
    assert [sorted(record["forms"]) for _, _, record in served(manifest)] == [["basic"], ["basic"]]
    assert len(list((repository / "artifacts").iterdir())) == files + 4  # a form file and its reference, twice


def test_an_unknown_form_is_a_usage_error_naming_the_forms(run_cli, tmp_path):
    code, _, err = run_cli("--repository", tmp_path / "r", "build", "iris", "--forms", "ort,tiny")
    assert code == 2
    assert "argument --forms: unknown form 'tiny'; forms: ort, basic, fused, gemm, or auto, all, none" in err
    assert not (tmp_path / "r").exists()
