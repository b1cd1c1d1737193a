"""convert/arithmetic.py: what a file computes, read off its graph and every subgraph, and its operator types."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_helpers import make_model, rng, tensor
from onnx import TensorProto, helper

from onnxport.convert import fp16, int8
from onnxport.convert.arithmetic import arithmetic, operator_types

FLOAT, FLOAT16 = TensorProto.FLOAT, TensorProto.FLOAT16


def matmul_model() -> onnx.ModelProto:
    r = rng(1)
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="dense"),
            helper.make_node("Relu", ["h"], ["y"], name="relu"),
        ],
        {"w": r.normal(size=(16, 8)).astype(np.float32)},
        [tensor("x", "batch", 16)],
        [tensor("y", "batch", 8)],
    )


def if_model(
    then_nodes: list[onnx.NodeProto], then_initializers: dict | None = None, opsets=(("", 17),)
) -> onnx.ModelProto:
    """y = x + 1 in its else branch, then_nodes (x -> t) in its then branch."""
    then_branch = helper.make_graph(
        then_nodes,
        "then",
        [],
        [tensor("t", 4, 8)],
        [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in (then_initializers or {}).items()],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["e"], name="plus_one")], "else", [], [tensor("e", 4, 8)]
    )
    return make_model(
        [helper.make_node("If", ["flag"], ["y"], name="branch", then_branch=then_branch, else_branch=else_branch)],
        {"one": np.float32(1)},
        [tensor("flag", elem=TensorProto.BOOL), tensor("x", 4, 8)],
        [tensor("y", 4, 8)],
        opsets,
    )


def test_a_float_graph_is_fp32():
    assert arithmetic(matmul_model()) == "fp32"


def test_the_fp16_variant_is_fp16():
    model = matmul_model()
    converted, _ = fp16.make_fp16(model, [{"x": rng(2).normal(size=(4, 16)).astype(np.float32)}])
    assert arithmetic(converted) == "fp16"


def test_a_round_trip_through_a_cast_to_float16_is_fp16():
    """No fp16 weight, no declared fp16 value: only Cast's `to` says the values were rounded."""
    model = make_model(
        [
            helper.make_node("Cast", ["x"], ["half"], name="to_half", to=FLOAT16),
            helper.make_node("Cast", ["half"], ["y"], name="to_float", to=FLOAT),
        ],
        {},
        [tensor("x", 4, 8)],
        [tensor("y", 4, 8)],
    )
    assert arithmetic(model) == "fp16"


def test_an_fp16_constant_inside_an_if_branch_is_fp16():
    half = onnx.numpy_helper.from_array(np.ones((4, 8), np.float16), "c")
    model = if_model(
        [
            helper.make_node("Constant", [], ["c"], name="half_constant", value=half),
            helper.make_node("Cast", ["c"], ["cf"], name="to_float", to=FLOAT),
            helper.make_node("Mul", ["x", "cf"], ["t"], name="scale"),
        ]
    )
    assert arithmetic(model) == "fp16"


def test_a_qdq_graph_is_int8():
    model = make_model(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quantize"),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequantize"),
        ],
        {"s": np.float32(0.1), "z": np.uint8(128)},
        [tensor("x", 4, 8)],
        [tensor("y", 4, 8)],
    )
    assert arithmetic(model) == "int8"


def test_the_dynamic_int8_variant_is_int8():
    quantized, _ = int8.make_int8_dynamic(matmul_model())
    assert arithmetic(quantized) == "int8"


def test_a_matmul_integer_inside_an_if_branch_is_int8():
    w = rng(3).integers(-127, 128, size=(8, 8)).astype(np.int8)
    model = if_model(
        [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="quantize_x"),
            helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"], name="matmul"),
            helper.make_node("Cast", ["acc"], ["t"], name="to_float", to=FLOAT),
        ],
        {"w": w, "wz": np.int8(0)},
    )
    assert arithmetic(model) == "int8"
    assert "ai.onnx/MatMulInteger" in operator_types(model)


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("DynamicQuantizeLSTM", "int8"),
        ("MatMulIntegerToFloat", "int8"),
        ("QAttention", "int8"),
        ("QGemm", "int8"),
        ("QLinearAdd", "int8"),
        ("QOrderedMatMul", "int8"),
        ("MatMulNBits", "int8"),
        ("QuickGelu", "fp32"),  # starts with Q, computes in float
    ],
)
def test_com_microsoft_quantized_operators_are_int8(op, expected):
    # Read, not run: the graph only has to name the operator.
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name="op", domain="com.microsoft")],
        "contrib",
        [tensor("x", 4, 8)],
        [tensor("y", 4, 8)],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    assert arithmetic(model) == expected
    assert operator_types(model) == [f"com.microsoft/{op}"]


def test_int8_wins_over_fp16():
    model = make_model(
        [
            helper.make_node("Cast", ["x"], ["half"], name="to_half", to=FLOAT16),
            helper.make_node("Cast", ["half"], ["xf"], name="to_float", to=FLOAT),
            helper.make_node("QuantizeLinear", ["xf", "s", "z"], ["q"], name="quantize"),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequantize"),
        ],
        {"s": np.float32(0.1), "z": np.uint8(128)},
        [tensor("x", 4, 8)],
        [tensor("y", 4, 8)],
    )
    assert arithmetic(model) == "int8"


def test_operator_types_are_sorted_with_their_domains_and_cover_subgraphs():
    half = onnx.numpy_helper.from_array(np.ones((4, 8), np.float16), "c")
    model = if_model(
        [
            helper.make_node("Constant", [], ["c"], name="half_constant", value=half),
            helper.make_node("Cast", ["c"], ["t"], name="to_float", to=FLOAT),
        ]
    )
    assert operator_types(model) == ["ai.onnx/Add", "ai.onnx/Cast", "ai.onnx/Constant", "ai.onnx/If"]


def test_operator_types_name_the_ml_domain_and_read_an_explicit_ai_onnx_as_the_default():
    graph = helper.make_graph(
        [
            helper.make_node(
                "Scaler", ["x"], ["s"], name="scale", domain="ai.onnx.ml", offset=[0.0] * 4, scale=[2.0] * 4
            ),
            helper.make_node("Relu", ["s"], ["y"], name="relu", domain="ai.onnx"),
        ],
        "ml",
        [tensor("x", 2, 4)],
        [tensor("y", 2, 4)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    assert operator_types(model) == ["ai.onnx.ml/Scaler", "ai.onnx/Relu"]
    assert arithmetic(model) == "fp32"
