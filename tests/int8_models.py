"""An already-int8 model as third parties ship them: onnxruntime's quantize_dynamic of a small float MLP."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantized_file(folder: Path) -> str:
    """folder/int8.onnx (x: [batch, 64] float32 -> y: [batch, 32]), made from folder/float.onnx; its path."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    r = np.random.default_rng(7)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["hidden"], name="layer1"),
            helper.make_node("Relu", ["hidden"], ["active"], name="relu"),
            helper.make_node("MatMul", ["active", "w2"], ["y"], name="layer2"),
        ],
        "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])],
        [
            numpy_helper.from_array((r.normal(size=(64, 256)) * 0.1).astype(np.float32), "w1"),
            numpy_helper.from_array((r.normal(size=(256, 32)) * 0.1).astype(np.float32), "w2"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, folder / "float.onnx")
    quantize_dynamic(folder / "float.onnx", folder / "int8.onnx", weight_type=QuantType.QUInt8)
    return str(folder / "int8.onnx")


def quantized_model() -> onnx.ModelProto:
    """The same model, loaded (made in a temporary folder)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return onnx.load(quantized_file(Path(folder)))
