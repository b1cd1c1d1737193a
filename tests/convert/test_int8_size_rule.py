"""An int8 variant that is not 1.5x smaller than fp32 is skipped, with the figures (convert/variant_maker.py)."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxport.repository import testdata


def mostly_unquantizable(folder) -> None:
    """A small MatMul next to a large Add constant: the quantizers leave the Add's 64 KB in float."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.standard_normal((256, 8)).astype(np.float32), "big")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
        helper.make_node("Add", ["h", "big"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "mostly-float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 8])],
        [weight, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    folder.mkdir()
    onnx.save(model, folder / "model.onnx")
    x = rng.standard_normal((256, 8)).astype(np.float32)
    y = x @ numpy_helper.to_array(weight) + numpy_helper.to_array(bias)
    testdata.write_set(folder, 0, {"x": x}, {"y": y})


def test_int8_that_compresses_nothing_is_skipped_with_its_size(run_cli, tmp_path):
    mostly_unquantizable(tmp_path / "model")
    code, _, err = run_cli("--repository", tmp_path / "repo", "import", tmp_path / "model", "--name", "m", "--quiet")
    assert code == 0, err
    variants = json.loads((tmp_path / "repo" / "manifest.json").read_text())["models"]["m"]["variants"]
    for name in ("int8-dynamic", "int8-static"):
        record = variants[name]
        assert record["status"] == "skipped", record
        assert "the size of fp32" in record["reason"] and "not at least 1.5x smaller" in record["reason"], record
        assert "file" not in record, record
    assert variants["fp16"]["status"] == "ok"
