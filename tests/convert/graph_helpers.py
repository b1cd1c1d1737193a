"""Small ONNX graphs for the conversion tests: a checked model from nodes, and tensor declarations."""

from __future__ import annotations

import platform
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

# x86 CPUs without VNNI (AVX2 alone) add onnxruntime's u8 x s8 int8 products in pairs in 16 bits, which
# saturate: a MatMul with int8 weights was off fp32 by 0.08 to 0.2 of its range there (0.007 with uint8
# weights, within 0.05 on a VNNI CPU). onnxruntime's session.x64quantprecision, which takes exact kernels,
# failed to load minilm's int8 files in 1.30. The tests whose figures assume exact int8 kernels say so.
_CPUINFO = Path("/proc/cpuinfo")
NO_VNNI = (
    platform.machine() == "x86_64"
    and _CPUINFO.exists()
    and not re.search(r"\b(avx512_vnni|avx_vnni)\b", _CPUINFO.read_text())
)
saturates_without_vnni = pytest.mark.xfail(
    NO_VNNI, strict=True, reason="int8 x int8 products saturate on an x86 CPU without VNNI"
)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def make_model(nodes, initializers, inputs, outputs, opsets=(("", 17),)) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "test",
        inputs,
        outputs,
        [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def tensor(name, *shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape))
