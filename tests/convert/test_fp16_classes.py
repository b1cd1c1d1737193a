"""server/onnxport/convert/fp16/ on the classes of model its conversion got wrong, each a small
graph made with onnx.helper and run in onnxruntime: unnamed nodes, If subgraphs reading the outer
scope, pre-quantized islands, integer arithmetic in float, overflow inside a branch, keep_float."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxport import runtime
from onnxport.convert import fp16
from onnxport.convert.graph import graphs

FLOAT, FLOAT16 = TensorProto.FLOAT, TensorProto.FLOAT16


def make_model(nodes, initializers, inputs, outputs, opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "test",
        inputs,
        outputs,
        [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def tensor(name, *shape, elem=FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape))


def run(model: onnx.ModelProto, feeds) -> dict[str, np.ndarray]:
    session = runtime.create_session(model.SerializeToString(), label="test")
    return runtime.run(session, feeds, label="test")


def scaled_error(reference: np.ndarray, got: np.ndarray) -> float:
    return float(np.abs(reference.astype(np.float64) - got).max() / np.abs(reference).max())


def checked(model: onnx.ModelProto) -> dict[str, int]:
    """Element types of every value in every graph, after onnx's strict type checks."""
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, check_type=True)
    types = {i.name: i.data_type for g in graphs(inferred.graph) for i in g.initializer}
    types.update(
        {
            v.name: v.type.tensor_type.elem_type
            for g in graphs(inferred.graph)
            for v in [*g.value_info, *g.input, *g.output]
        }
    )
    return types


def node(model: onnx.ModelProto, name: str) -> onnx.NodeProto:
    return next(n for g in graphs(model.graph) for n in g.node if n.name == name)


def fp16_initializers(graph: onnx.GraphProto) -> set[str]:
    return {i.name for i in graph.initializer if i.data_type == FLOAT16}


def weights(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


# ---------------------------------------------------------------- node names


def test_unnamed_nodes_give_unique_value_names():
    """x is read by two unnamed nodes, one of them kept in fp32 (a Resize): Casts named after
    nodes ("x_cast_to_" twice) were two definitions of one value and onnxruntime refused it."""
    model = make_model(
        [
            helper.make_node("Mul", ["x", "two"], ["doubled"]),
            helper.make_node("Resize", ["x", "", "scales"], ["resized"], mode="nearest"),
            helper.make_node("Add", ["doubled", "resized"], ["y"]),
        ],
        {"two": np.float32(2), "scales": np.array([1, 1, 1, 1], np.float32)},
        [tensor("x", 1, 2, 3, 3)],
        [tensor("y", 1, 2, 3, 3)],
    )
    feeds = {"x": weights(0, 1, 2, 3, 3)}
    converted, settings = fp16.make_fp16(model, [feeds])
    values = [o for g in graphs(converted.graph) for n in g.node for o in n.output]
    assert len(set(values)) == len(values)
    assert scaled_error(run(model, feeds)["y"], run(converted, feeds)["y"]) < 1e-2
    assert checked(converted)["y"] == FLOAT
    names = [n.name for g in graphs(converted.graph) for n in g.node]
    assert all(names) and len(set(names)) == len(names)
    assert "Resize" in settings["blocked_ops"]


# ---------------------------------------------------------------- If subgraphs


def branch(name: str, offset: float, local_weights: bool = False) -> onnx.GraphProto:
    """Conv -> MatMul -> Add on x; the weights are outer-scope initializers unless local_weights."""
    initializers = [helper.make_tensor(f"{name}_bias", FLOAT, [4], [offset] * 4)]
    conv_w, mat_w = "conv_w", "mat_w"
    if local_weights:
        conv_w, mat_w = f"{name}_conv_w", f"{name}_mat_w"
        initializers += [
            numpy_helper.from_array(weights(1, 2, 2, 3, 3), conv_w),
            numpy_helper.from_array(weights(2, 4, 4), mat_w),
        ]
    return helper.make_graph(
        [
            helper.make_node("Conv", ["x", conv_w], [f"{name}_conv"], name=f"{name}_conv", pads=[1, 1, 1, 1]),
            helper.make_node("MatMul", [f"{name}_conv", mat_w], [f"{name}_mm"], name=f"{name}_matmul"),
            helper.make_node("Add", [f"{name}_mm", f"{name}_bias"], [f"{name}_out"], name=f"{name}_add"),
        ],
        name,
        [],
        [helper.make_tensor_value_info(f"{name}_out", FLOAT, None)],
        initializers,
    )


def if_model(outer_ops: bool, local_weights: bool = False) -> onnx.ModelProto:
    """flag ? then(x) : else(x); with outer_ops the If's output goes through an outer Relu
    (fp16 work in the main graph too), else through an Identity."""
    nodes = [
        helper.make_node(
            "If",
            ["flag"],
            ["chosen"],
            name="if",
            then_branch=branch("then", 0.5, local_weights),
            else_branch=branch("else", -0.5, local_weights),
        ),
        helper.make_node("Relu" if outer_ops else "Identity", ["chosen"], ["y"], name="last"),
    ]
    outer = {} if local_weights else {"conv_w": weights(1, 2, 2, 3, 3), "mat_w": weights(2, 4, 4)}
    return make_model(
        nodes, outer, [tensor("x", 1, 2, 4, 4), tensor("flag", elem=TensorProto.BOOL)], [tensor("y", 1, 2, 4, 4)]
    )


def if_feeds(seed: int) -> list[dict[str, np.ndarray]]:
    return [{"x": weights(seed, 1, 2, 4, 4), "flag": np.array(flag)} for flag in (True, False)]


@pytest.mark.parametrize("outer_ops", [False, True], ids=["identity-after-if", "relu-after-if"])
def test_if_branches_convert_with_their_outer_scope(outer_ops):
    """Both branches read the outer initializers conv_w and mat_w: converted in the main graph
    only, they reached the branches' Conv and MatMul as fp16 next to fp32 activations, and the
    If's output type disagreed with its branches' (vad-web-silero-legacy: onnxruntime refused it)."""
    model = if_model(outer_ops)
    sets = if_feeds(3)
    converted, _ = fp16.make_fp16(model, sets)
    types = checked(converted)
    assert fp16_initializers(converted.graph) == {"conv_w", "mat_w"}
    for name in ("then", "else"):
        body = next(a.g for a in node(converted, "if").attribute if a.name == f"{name}_branch")
        assert fp16_initializers(body) == {f"{name}_bias"}
        assert types[node(converted, f"{name}_matmul").output[0]] == FLOAT16
        assert body.output[0].type.tensor_type.elem_type == FLOAT16
    assert types[node(converted, "if").output[0]] == FLOAT16
    assert types["y"] == FLOAT
    for feeds in sets:
        assert scaled_error(run(model, feeds)["y"], run(converted, feeds)["y"]) < 1e-2


def test_float_work_only_inside_an_if_is_converted():
    """silero-vad: 5 nodes in the main graph, none of them float: the check for anything to
    convert looked at the main graph only and skipped the model."""
    model = if_model(outer_ops=False, local_weights=True)
    sets = if_feeds(4)
    converted, _ = fp16.make_fp16(model, sets)
    checked(converted)
    for name in ("then", "else"):
        body = next(a.g for a in node(converted, "if").attribute if a.name == f"{name}_branch")
        assert fp16_initializers(body) == {f"{name}_bias", f"{name}_conv_w", f"{name}_mat_w"}
    for feeds in sets:
        assert scaled_error(run(model, feeds)["y"], run(converted, feeds)["y"]) < 1e-2


def test_overflow_inside_a_branch_is_kept_fp32():
    """A value of 1e5 inside an If branch: the overflow probe looked at the main graph only."""
    then = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "big"], ["hot"], name="grow"),
            helper.make_node("Mul", ["hot", "small"], ["cool"], name="shrink"),
        ],
        "then",
        [],
        [helper.make_tensor_value_info("cool", FLOAT, None)],
        [numpy_helper.from_array(np.float32(1e5), "big"), numpy_helper.from_array(np.float32(1e-5), "small")],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["negated"], name="negate")],
        "else",
        [],
        [helper.make_tensor_value_info("negated", FLOAT, None)],
    )
    model = make_model(
        [
            helper.make_node("Greater", ["flag", "zero"], ["cond"], name="cond"),
            helper.make_node("If", ["cond"], ["chosen"], name="if", then_branch=then, else_branch=other),
            helper.make_node("Add", ["chosen", "x"], ["y"], name="add"),
        ],
        {"zero": np.float32(0)},
        [tensor("x", 8), tensor("flag")],
        [tensor("y", 8)],
    )
    feeds = {"x": np.linspace(0.5, 1, 8, dtype=np.float32), "flag": np.array(1, np.float32)}
    converted, settings = fp16.make_fp16(model, [feeds])
    assert {"grow", "shrink"} <= set(settings["blocked_nodes"])
    assert checked(converted)["hot"] == FLOAT
    got = run(converted, feeds)["y"]
    assert np.isfinite(got).all()
    assert scaled_error(run(model, feeds)["y"], got) < 1e-2


def loop_model() -> onnx.ModelProto:
    """3 steps of h = tanh(h @ w + b) * 1e5 * 1e-5 (w, b, the 1e5 from the outer scope), h stacked."""
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "w"], ["mm"], name="body_matmul"),
            helper.make_node("Add", ["mm", "b"], ["pre"], name="body_add"),
            helper.make_node("Tanh", ["pre"], ["tanh"], name="body_tanh"),
            helper.make_node("Mul", ["tanh", "big"], ["hot"], name="grow"),
            helper.make_node("Mul", ["hot", "small"], ["h_out"], name="shrink"),
            helper.make_node("Identity", ["h_out"], ["h_scan"], name="body_scan"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
        ],
        "body",
        [tensor("i", elem=TensorProto.INT64), tensor("cond_in", elem=TensorProto.BOOL), tensor("h_in", 1, 4)],
        [tensor("cond_out", elem=TensorProto.BOOL), tensor("h_out", 1, 4), tensor("h_scan", 1, 4)],
        [numpy_helper.from_array(np.float32(1e-5), "small")],
    )
    return make_model(
        [
            helper.make_node("Loop", ["steps", "go", "h0"], ["h_final", "hs"], name="loop", body=body),
            helper.make_node("Relu", ["hs"], ["y"], name="relu"),
        ],
        {
            "w": weights(13, 4, 4),
            "b": weights(14, 4),
            "big": np.float32(1e5),
            "steps": np.int64(3),
            "go": np.array(True),
        },
        [tensor("h0", 1, 4)],
        [tensor("y", 3, 1, 4), tensor("h_final", 1, 4)],
    )


def scan_model() -> onnx.ModelProto:
    """s = s + x_t @ w * 1e5 * 1e-5 over 5 rows of xs, s stacked."""
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["x_t", "w"], ["xw"], name="body_matmul"),
            helper.make_node("Mul", ["xw", "big"], ["hot"], name="grow"),
            helper.make_node("Mul", ["hot", "small"], ["step"], name="shrink"),
            helper.make_node("Add", ["s_in", "step"], ["s_out"], name="body_add"),
            helper.make_node("Identity", ["s_out"], ["s_scan"], name="body_scan"),
        ],
        "body",
        [tensor("s_in", 4), tensor("x_t", 4)],
        [tensor("s_out", 4), tensor("s_scan", 4)],
        [numpy_helper.from_array(np.float32(1e-5), "small")],
    )
    return make_model(
        [
            helper.make_node("Scan", ["s0", "xs"], ["s_final", "ss"], name="scan", body=body, num_scan_inputs=1),
            helper.make_node("Relu", ["ss"], ["y"], name="relu"),
        ],
        {"w": weights(15, 4, 4), "big": np.float32(1e5)},
        [tensor("s0", 4), tensor("xs", 5, 4)],
        [tensor("y", 5, 4), tensor("s_final", 4)],
    )


@pytest.mark.parametrize(
    "make, feeds",
    [
        (loop_model, {"h0": weights(16, 1, 4)}),
        (scan_model, {"s0": weights(17, 4), "xs": weights(18, 5, 4)}),
    ],
    ids=["loop", "scan"],
)
def test_loop_and_scan_bodies_convert_and_keep_their_hot_values(make, feeds):
    """The body's state crosses the boundary in fp16, its MatMul reads the outer w as fp16, and
    the 1e5 inside it (seen through the running peak the probe carries out) stays fp32."""
    model = make()
    converted, settings = fp16.make_fp16(model, [feeds])
    types = checked(converted)
    assert {"grow", "shrink"} <= set(settings["blocked_nodes"])
    assert types["hot"] == FLOAT
    assert types[node(converted, "body_matmul").output[0]] == FLOAT16
    assert "w" in fp16_initializers(converted.graph)
    expected, got = run(model, feeds), run(converted, feeds)
    for name in expected:
        assert scaled_error(expected[name], got[name]) < 1e-2, name


# ---------------------------------------------------------------- pre-quantized graphs


def quantized_model() -> onnx.ModelProto:
    """onnxruntime's dynamic quantization of x @ w_q next to a float MatMul x @ w:
    DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(x_scale * w_scale)."""
    r = np.random.default_rng(4)
    return make_model(
        [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_scale", "x_zero"], name="quantize"),
            helper.make_node("MatMulInteger", ["x_q", "w_q", "x_zero", "w_zero"], ["acc"], name="matmul_integer"),
            helper.make_node("Cast", ["acc"], ["acc_float"], name="acc_to_float", to=FLOAT),
            helper.make_node("Mul", ["x_scale", "w_scale"], ["scale"], name="scales"),
            helper.make_node("Mul", ["acc_float", "scale"], ["quantized_out"], name="dequantize"),
            helper.make_node("MatMul", ["x", "w"], ["float_out"], name="float_matmul"),
            helper.make_node("Add", ["quantized_out", "float_out"], ["y"], name="add"),
        ],
        {
            "w_q": r.integers(0, 255, (16, 8)).astype(np.uint8),
            "w_zero": np.uint8(128),
            "w_scale": np.float32(0.002),
            "w": weights(5, 16, 8),
        },
        [tensor("x", 4, 16)],
        [tensor("y", 4, 8)],
    )


def test_quantized_island_keeps_its_fp32_inputs():
    """DynamicQuantizeLinear was fed fp16 and onnxruntime refused the model; the scales
    (x_scale * w_scale ~ 2e-5, under fp16's smallest normal value) must stay fp32 too."""
    model = quantized_model()
    feeds = {"x": weights(6, 4, 16) * 0.01}
    converted, settings = fp16.make_fp16(model, [feeds])
    types = checked(converted)
    assert types[node(converted, "quantize").input[0]] == FLOAT
    assert types["x_scale"] == FLOAT and types["scale"] == FLOAT
    assert {"scales", "dequantize"} <= set(settings["blocked_nodes"])
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= set(settings["blocked_ops"])
    assert types[node(converted, "float_matmul").output[0]] == FLOAT16
    assert fp16_initializers(converted.graph) == {"w"}
    assert scaled_error(run(model, feeds)["y"], run(converted, feeds)["y"]) < 1e-2


def test_integer_arithmetic_in_float_stays_exact():
    """A size computed in float (Shape -> Cast -> Mul 0.5 -> Floor -> Cast): fp16 holds integers
    exactly only up to 2048, so 4099 * 0.5 came out 2050 instead of 2049."""
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["shape"], name="shape"),
            helper.make_node("Cast", ["shape"], ["shape_float"], name="to_float", to=FLOAT),
            helper.make_node("Mul", ["shape_float", "half"], ["halved"], name="halve"),
            helper.make_node("Floor", ["halved"], ["floored"], name="floor"),
            helper.make_node("Cast", ["floored"], ["size"], name="to_int", to=TensorProto.INT64),
            helper.make_node("Mul", ["x", "w"], ["y"], name="scale"),
        ],
        {"half": np.array([0.5, 0.5], np.float32), "w": np.float32(3)},
        [tensor("x", 1, 4099)],
        [tensor("y", 1, 4099), tensor("size", 2, elem=TensorProto.INT64)],
    )
    feeds = {"x": weights(7, 1, 4099)}
    converted, settings = fp16.make_fp16(model, [feeds])
    checked(converted)
    assert run(converted, feeds)["size"].tolist() == [0, 2049]
    assert {"halve", "floor"} <= set(settings["blocked_nodes"])


# ---------------------------------------------------------------- keep_float


def test_keep_float_keeps_nodes_in_the_main_graph_and_in_a_branch():
    model = if_model(outer_ops=True)
    sets = if_feeds(8)
    converted, settings = fp16.make_fp16(model, sets, keep_float=["last", "else_matmul"])
    types = checked(converted)
    assert {"last", "else_matmul"} <= set(settings["blocked_nodes"])
    assert all(types[name] == FLOAT for name in node(converted, "last").input)
    assert types[node(converted, "else_matmul").output[0]] == FLOAT
    assert all(types[name] == FLOAT for name in node(converted, "else_matmul").input)
    # Its neighbours in the branch and the other branch still compute in fp16.
    assert types[node(converted, "else_conv").output[0]] == FLOAT16
    assert types[node(converted, "then_matmul").output[0]] == FLOAT16
    for feeds in sets:
        assert scaled_error(run(model, feeds)["y"], run(converted, feeds)["y"]) < 1e-2


def test_keep_float_on_an_if_keeps_its_branches():
    model = if_model(outer_ops=True)
    sets = if_feeds(9)
    converted, settings = fp16.make_fp16(model, sets, keep_float=["if"])
    types = checked(converted)
    assert {"if", "then_conv", "else_add"} <= set(settings["blocked_nodes"])
    assert types[node(converted, "then_matmul").output[0]] == FLOAT
    assert types[node(converted, "if").output[0]] == FLOAT
    assert types[node(converted, "last").output[0]] == FLOAT16
    for feeds in sets:
        assert scaled_error(run(model, feeds)["y"], run(converted, feeds)["y"]) < 1e-2


def test_keep_float_refuses_unknown_names():
    with pytest.raises(ValueError, match="no_such_node"):
        fp16.make_fp16(if_model(outer_ops=True), [], keep_float=["no_such_node"])


# ---------------------------------------------------------------- accuracy rules


def test_batch_normalization_stays_fp32():
    """Its mean and scale rounded to fp16 move the output by the rounding times the gain."""
    channels = 4
    r = np.random.default_rng(10)
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w"], ["conv"], name="conv"),
            helper.make_node("BatchNormalization", ["conv", "scale", "bias", "mean", "var"], ["y"], name="bn"),
        ],
        {
            "w": weights(11, channels, 2, 1, 1),
            "scale": r.uniform(1, 2, channels).astype(np.float32),
            "bias": r.uniform(-1, 1, channels).astype(np.float32),
            "mean": r.uniform(5, 6, channels).astype(np.float32),
            "var": np.full(channels, 4e-4, np.float32),
        },
        [tensor("x", 1, 2, 3, 3)],
        [tensor("y", 1, channels, 3, 3)],
    )
    feeds = {"x": weights(12, 1, 2, 3, 3)}
    converted, settings = fp16.make_fp16(model, [feeds])
    types = checked(converted)
    assert types["conv"] == FLOAT16
    assert types[node(converted, "bn").input[0]] == FLOAT
    assert fp16_initializers(converted.graph) == {"w"}
    assert "BatchNormalization" in settings["blocked_ops"]


def test_movement_ops_follow_a_producer_kept_in_fp32():
    """A Reshape after a kept MatMul stays fp32: in fp16 it would only round and add a Cast pair.
    With the whole If kept, the Identity after it is all that is left: nothing to convert."""
    model = make_model(
        [
            helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
            helper.make_node("Reshape", ["mm", "shape"], ["flat"], name="reshape"),
            helper.make_node("Mul", ["flat", "flat"], ["y"], name="square"),
        ],
        {"w": weights(19, 4, 4), "shape": np.array([-1], np.int64)},
        [tensor("x", 2, 4)],
        [tensor("y", 8)],
    )
    feeds = {"x": weights(20, 2, 4)}
    converted, settings = fp16.make_fp16(model, [feeds], keep_float=["matmul"])
    types = checked(converted)
    assert "reshape" in settings["blocked_nodes"]
    assert types["flat"] == FLOAT
    assert types[node(converted, "square").output[0]] == FLOAT16
    assert scaled_error(run(model, feeds)["y"], run(converted, feeds)["y"]) < 1e-2
    with pytest.raises(fp16.VariantSkipped):
        fp16.make_fp16(if_model(outer_ops=False), if_feeds(21), keep_float=["if"])
