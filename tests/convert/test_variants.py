"""server/onnxport/convert/lower_precision.py on small hand-made graphs, each run in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_helpers import make_model, rng, saturates_without_vnni, tensor
from onnx import TensorProto, helper, numpy_helper

from onnxport import runtime
from onnxport.convert import lower_precision
from onnxport.convert.intake.export import export
from onnxport.recipe import SourceModel


def run(model: onnx.ModelProto, feeds) -> dict[str, np.ndarray]:
    session = runtime.create_session(model.SerializeToString(), label="test")
    return runtime.run(session, feeds, label="test")


def initializer_types(model: onnx.ModelProto) -> set[int]:
    return {i.data_type for i in model.graph.initializer}


def scaled_error(reference: np.ndarray, got: np.ndarray) -> float:
    return float(np.abs(reference - got).max() / np.abs(reference).max())


# ---------------------------------------------------------------- fp16


def overflow_model() -> onnx.ModelProto:
    """x -> MatMul -> *1000 -> Relu -> *0.001 -> MatMul: the middle values reach ~3e5."""
    r = rng()
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"),
            helper.make_node("Mul", ["h", "big"], ["hot"], name="grow"),
            helper.make_node("Relu", ["hot"], ["hot_relu"], name="relu"),
            helper.make_node("Mul", ["hot_relu", "small"], ["cool"], name="shrink"),
            helper.make_node("MatMul", ["cool", "w2"], ["y"], name="last"),
        ],
        {
            "w1": r.uniform(0.5, 1.5, (4, 4)).astype(np.float32),
            "big": np.float32(1000),
            "small": np.float32(1e-3),
            "w2": r.uniform(0.5, 1.5, (4, 3)).astype(np.float32),
        },
        [tensor("x", "batch", 4)],
        [tensor("y", "batch", 3)],
    )


OVERFLOW_FEEDS = {"x": rng(1).uniform(50, 100, (6, 4)).astype(np.float32)}


def test_overflow_model_really_exceeds_fp16():
    # What plain fp16 conversion would store between the two Muls: the premise of the next tests.
    hot = (OVERFLOW_FEEDS["x"] @ numpy_helper.to_array(overflow_model().graph.initializer[0])) * 1000
    assert hot.max() > lower_precision.FP16_MAX
    with np.errstate(over="ignore"):
        assert np.isinf(hot.astype(np.float16)).any()


def test_overflowing_nodes_are_those_touching_the_hot_values():
    assert lower_precision.overflowing_nodes(overflow_model(), [OVERFLOW_FEEDS]) == {"grow", "relu", "shrink"}


def test_fp16_blocks_overflowing_nodes_and_stays_finite():
    model = overflow_model()
    reference = run(model, OVERFLOW_FEEDS)["y"]
    fp16, settings = lower_precision.make_fp16(model, [OVERFLOW_FEEDS])
    assert settings["blocked_nodes"] == ["grow", "relu", "shrink"]
    assert TensorProto.FLOAT16 in initializer_types(fp16)  # the MatMul weights did convert
    got = run(fp16, OVERFLOW_FEEDS)["y"]
    assert got.dtype == np.float32  # keep_io_types
    assert np.isfinite(got).all()
    assert scaled_error(reference, got) < 1e-2


def test_fp16_keeps_blocked_nodes_in_fp32():
    fp16, _ = lower_precision.make_fp16(overflow_model(), [OVERFLOW_FEEDS])
    onnx.checker.check_model(fp16)
    inferred = onnx.shape_inference.infer_shapes(fp16, strict_mode=True)
    types = {v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info}
    nodes = {n.name: n for n in fp16.graph.node}
    for name in ("grow", "relu", "shrink"):
        assert types[nodes[name].output[0]] == TensorProto.FLOAT, name
    assert types[nodes["first"].output[0]] == TensorProto.FLOAT16


def test_fp16_without_overflow_blocks_nothing():
    r = rng(1)
    feeds = {"x": r.uniform(0, 1, (6, 4)).astype(np.float32)}
    _, settings = lower_precision.make_fp16(overflow_model(), [feeds])
    assert settings["blocked_nodes"] == []


def square_model() -> onnx.ModelProto:
    """x*1e4*10 -> Mul(hot, hot) -> Sqrt -> *1e-5 -> MatMul: a hot value read twice by one node."""
    r = rng()
    return make_model(
        [
            helper.make_node("Mul", ["x", "big"], ["h"], name="grow1"),
            helper.make_node("Mul", ["h", "ten"], ["hot"], name="grow"),
            helper.make_node("Mul", ["hot", "hot"], ["square"], name="square"),
            helper.make_node("Sqrt", ["square"], ["root"], name="root"),
            helper.make_node("Mul", ["root", "small"], ["cool"], name="shrink"),
            helper.make_node("MatMul", ["cool", "w"], ["y"], name="last"),
        ],
        {
            "big": np.float32(1e4),
            "ten": np.float32(10),
            "small": np.float32(1e-5),
            "w": r.uniform(0.5, 1.5, (4, 3)).astype(np.float32),
        },
        [tensor("x", "batch", 4)],
        [tensor("y", "batch", 3)],
    )


def test_fp16_blocks_a_node_that_reads_a_hot_value_twice():
    r = rng(1)
    feeds = {"x": r.uniform(0.5, 1, (6, 4)).astype(np.float32)}
    model = square_model()
    fp16, settings = lower_precision.make_fp16(model, [feeds])
    assert {"grow", "square", "root"} <= set(settings["blocked_nodes"])
    assert np.isfinite(run(fp16, feeds)["y"]).all()


def test_fp16_of_a_graph_without_float_weights_or_ops_is_skipped():
    model = make_model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
        {},
        [tensor("a", 2, elem=TensorProto.INT64), tensor("b", 2, elem=TensorProto.INT64)],
        [tensor("y", 2, elem=TensorProto.INT64)],
    )
    feeds = {"a": np.array([1, 2]), "b": np.array([3, 4])}
    with pytest.raises(lower_precision.VariantSkipped):
        lower_precision.make_fp16(model, [feeds])


# ---------------------------------------------------------------- int8


def matmul_model() -> onnx.ModelProto:
    r = rng()
    return make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
        {"w": r.normal(size=(16, 4)).astype(np.float32)},
        [tensor("x", "batch", 16)],
        [tensor("y", "batch", 4)],
    )


def conv_model() -> onnx.ModelProto:
    r = rng()
    return make_model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        {"w": r.normal(size=(4, 1, 3, 3)).astype(np.float32), "b": r.normal(size=4).astype(np.float32)},
        [tensor("x", "batch", 1, 8, 8)],
        [tensor("y", "batch", 4, 8, 8)],
    )


@saturates_without_vnni
def test_int8_dynamic_quantizes_matmul_with_int8_weights():
    r = rng(1)
    model = matmul_model()
    feeds = {"x": r.normal(size=(5, 16)).astype(np.float32)}
    quantized, settings = lower_precision.make_int8_dynamic(model)
    ops = lower_precision.operator_histogram(quantized)
    assert "MatMulInteger" in ops and "DynamicQuantizeLinear" in ops
    assert "MatMul" not in ops
    assert settings["weight_type"] == "QInt8"
    assert TensorProto.INT8 in initializer_types(quantized)
    assert scaled_error(run(model, feeds)["y"], run(quantized, feeds)["y"]) < 0.05


def test_int8_dynamic_gives_conv_graphs_uint8_weights():
    r = rng(1)
    model = conv_model()
    feeds = {"x": r.uniform(size=(2, 1, 8, 8)).astype(np.float32)}
    quantized, settings = lower_precision.make_int8_dynamic(model)
    assert settings["weight_type"] == "QUInt8"
    assert "ConvInteger" in lower_precision.operator_histogram(quantized)
    weights = {i.name: i.data_type for i in quantized.graph.initializer}
    assert weights["w_quantized"] == TensorProto.UINT8
    assert TensorProto.INT8 not in set(weights.values())
    got = run(quantized, feeds)["y"]  # onnxruntime's ConvInteger takes these weights
    assert scaled_error(run(model, feeds)["y"], got) < 0.05


def no_weights_model() -> onnx.ModelProto:
    return make_model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Add", ["r", "x"], ["y"], name="add")],
        {},
        [tensor("x", "batch", 8)],
        [tensor("y", "batch", 8)],
    )


def test_int8_dynamic_of_a_graph_without_weights_is_skipped():
    with pytest.raises(lower_precision.VariantSkipped, match="no operator that onnxruntime quantizes"):
        lower_precision.make_int8_dynamic(no_weights_model())


def test_int8_static_of_a_graph_without_weights_is_skipped():
    r = rng(1)
    calibration = [{"x": r.normal(size=(4, 8)).astype(np.float32)}]
    with pytest.raises(lower_precision.VariantSkipped):
        lower_precision.make_int8_static(no_weights_model(), calibration)


def test_int8_static_without_calibration_is_skipped():
    with pytest.raises(lower_precision.VariantSkipped, match="no calibration"):
        lower_precision.make_int8_static(matmul_model(), [])


def test_int8_static_is_qdq_and_close_on_its_calibration_range():
    r = rng(1)
    model = matmul_model()
    calibration = [{"x": r.normal(size=(8, 16)).astype(np.float32)} for _ in range(4)]
    quantized, settings = lower_precision.make_int8_static(model, calibration)
    ops = lower_precision.operator_histogram(quantized)
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    assert settings["calibration_batches"] == 4
    feeds = calibration[0]
    assert scaled_error(run(model, feeds)["y"], run(quantized, feeds)["y"]) < 0.05


def test_int8_static_leaves_keep_float_nodes_alone():
    r = rng(1)
    model = make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="layer.0/dense/MatMul"),
            helper.make_node("MatMul", ["h", "w2"], ["y"], name="layer.0/output/dense/MatMul"),
        ],
        {"w1": r.normal(size=(8, 8)).astype(np.float32), "w2": r.normal(size=(8, 4)).astype(np.float32)},
        [tensor("x", "batch", 8)],
        [tensor("y", "batch", 4)],
    )
    calibration = [{"x": r.normal(size=(8, 8)).astype(np.float32)}]
    quantized, settings = lower_precision.make_int8_static(model, calibration, (r"output/dense/MatMul$",))
    assert settings["kept_float"] == ["layer.0/output/dense/MatMul"]
    kept = next(n for n in quantized.graph.node if n.name == "layer.0/output/dense/MatMul")
    # Its weight is still the float initializer, not a dequantized int8 one.
    assert "w2" in kept.input


def test_int8_dynamic_of_a_logistic_regression_export_does_not_crash():
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    features, labels = load_iris(return_X_y=True)
    features = features.astype(np.float32)
    classifier = LogisticRegression(max_iter=1000).fit(features, labels)
    source = SourceModel(
        framework="sklearn",
        model=classifier,
        input_names=["features"],
        output_names=["label", "probabilities"],
        dynamic_axes={},
        sample_inputs={"features": features[:1]},
        golden_inputs={"features": features},
        calibration_inputs=[],
        run=lambda feeds: {},
    )
    try:
        lower_precision.make_int8_dynamic(export(source))
    except lower_precision.VariantSkipped:
        pass  # skipping is a fine answer (only ai.onnx.ml operators); crashing is not


# ---------------------------------------------------------------- Gemm


def gemm_model(**attributes) -> onnx.ModelProto:
    r = rng()
    return make_model(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="gemm", **attributes)],
        {"w": r.normal(size=(3, 5)).astype(np.float32), "b": r.normal(size=3).astype(np.float32)},
        [tensor("x", "batch", 5)],
        [tensor("y", "batch", 3)],
    )


def test_gemm_to_matmul_preserves_outputs():
    r = rng(1)
    model = gemm_model(transB=1)
    feeds = {"x": r.normal(size=(4, 5)).astype(np.float32)}
    expected = run(model, feeds)["y"]
    rewritten = lower_precision.gemm_to_matmul(gemm_model(transB=1))  # same seed, same weights
    onnx.checker.check_model(rewritten, full_check=True)
    assert lower_precision.operator_histogram(rewritten) == {"Add": 1, "MatMul": 1}
    assert {i.name for i in rewritten.graph.initializer} == {"w_matmul", "b"}  # the Gemm weight is gone
    np.testing.assert_allclose(run(rewritten, feeds)["y"], expected, rtol=1e-5, atol=1e-6)


def test_gemm_with_alpha_is_left_alone():
    rewritten = lower_precision.gemm_to_matmul(gemm_model(transB=1, alpha=2.0))
    assert lower_precision.operator_histogram(rewritten) == {"Gemm": 1}


@saturates_without_vnni
def test_int8_dynamic_quantizes_gemm_through_the_rewrite():
    r = rng(1)
    model = gemm_model(transB=1)
    feeds = {"x": r.normal(size=(4, 5)).astype(np.float32)}
    quantized, _ = lower_precision.make_int8_dynamic(model)
    assert "MatMulInteger" in lower_precision.operator_histogram(quantized)
    assert scaled_error(run(model, feeds)["y"], run(quantized, feeds)["y"]) < 0.05
