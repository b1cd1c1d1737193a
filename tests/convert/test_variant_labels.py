"""Variants are named by what they are (issue 32 5a): an already-int8 model imported as it is keeps the key
`fp32` (the V2 API's version and URLs use it) but is shown as "original (int8)" in the manifest's `label`,
`onnxport list`, `onnxport info` (repository/variant_table.label); it was called fp32 everywhere.

The int8 model is onnxruntime's own quantize_dynamic output of a small float network, as voice filters
and OCR models ship theirs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
from graph_helpers import make_model, rng, tensor
from onnx import helper

from onnxport.repository import variant_table
from onnxport.serving.app import create_app


def float_model() -> onnx.ModelProto:
    r = rng(7)
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["hidden"], name="layer1"),
            helper.make_node("Relu", ["hidden"], ["active"], name="relu"),
            helper.make_node("MatMul", ["active", "w2"], ["y"], name="layer2"),
        ],
        {
            "w1": (r.normal(size=(64, 256)) * 0.1).astype(np.float32),
            "w2": (r.normal(size=(256, 32)) * 0.1).astype(np.float32),
        },
        [tensor("x", "batch", 64)],
        [tensor("y", "batch", 32)],
    )


def quantized_file(tmp_path: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    onnx.save(float_model(), tmp_path / "float.onnx")
    quantize_dynamic(tmp_path / "float.onnx", tmp_path / "int8.onnx", weight_type=QuantType.QUInt8)
    return tmp_path / "int8.onnx"


def imported(run_cli, tmp_path: Path, path: Path, name: str) -> dict:
    np.savez(tmp_path / "inputs.npz", x=rng(8).normal(size=(6, 64)).astype(np.float32))
    code, _, err = run_cli(
        "--repository",
        tmp_path / "repo",
        "import",
        path,
        "--name",
        name,
        "--task",
        "generic",
        "--inputs",
        tmp_path / "inputs.npz",
        "--quiet",
        "--forms",
        "none",
    )
    assert code == 0, err
    return json.loads((tmp_path / "repo" / "manifest.json").read_text())["models"][name]


def variant_cell(text: str, model: str) -> list[str]:
    """The `variant` column of the variant table (the first table with a `size` column) printed for `model`."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("model") and " size " in line)
    start = lines[header].index("variant")
    end = lines[header].index("size", start)
    rows = []
    for line in lines[header + 2 :]:
        if not line.startswith(model + " "):
            break
        rows.append(line[start:end].strip())
    return rows


def test_an_already_int8_original_is_shown_as_the_original_with_its_arithmetic(run_cli, tmp_path):
    entry = imported(run_cli, tmp_path, quantized_file(tmp_path), "quantized")
    original = entry["variants"]["fp32"]
    assert (original["status"], original["arithmetic"], original["precision"]) == ("ok", "int8", "fp32")
    assert original["label"] == "original (int8)"

    code, out, err = run_cli("--repository", tmp_path / "repo", "list")
    assert code == 0, err
    assert "original (int8)" in out and " fp32" not in out.split("served variants", 1)[1], out
    code, out, err = run_cli("--repository", tmp_path / "repo", "info", "quantized")
    assert code == 0, err
    cells = variant_cell(out, "quantized")
    assert cells[0] == "original (int8)" and "fp32" not in cells, out
    assert not re.search(r"^quantized +fp32 ", out, re.M), out  # no table of it (disk use too) says fp32
    print(out)

    # The key stays: the V2 API serves the model's default version, and names it, as before.
    client = create_app({"repository": tmp_path / "repo"}).test_client()
    assert client.get("/v2/models/quantized/versions/fp32/ready").status_code == 200
    assert client.get("/v2/models/quantized").get_json()["versions"][0] == "fp32"


def test_a_float_model_s_variants_are_shown_by_their_names(run_cli, tmp_path):
    onnx.save(float_model(), tmp_path / "float.onnx")
    entry = imported(run_cli, tmp_path, tmp_path / "float.onnx", "plain")
    labels = {name: record.get("label") for name, record in entry["variants"].items()}
    assert labels["fp32"] == "fp32" and labels["fp16"] == "fp16" and labels["int8-dynamic"] == "int8-dynamic", labels
    code, out, err = run_cli("--repository", tmp_path / "repo", "info", "plain")
    assert code == 0, err
    assert variant_cell(out, "plain") == list(variant_table.NAMES), out


def test_the_label_rule():
    assert variant_table.label("fp32", "fp32") == "fp32"
    assert variant_table.label("fp32", "int8") == "original (int8)"
    assert variant_table.label("fp32", "fp16") == "original (fp16)"  # a model shipped in half precision
    assert variant_table.label("fp16", "int8") == "fp16 (int8)"  # fp16 of an int8 original: int8 inside
    assert variant_table.label("int8-static", "int8") == "int8-static"
