"""Small ONNX graphs for the conversion tests: a checked model from nodes, and tensor declarations."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def make_model(nodes, initializers, inputs, outputs, opsets=(("", 17),)) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "test", inputs, outputs,
        [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def tensor(name, *shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape))
