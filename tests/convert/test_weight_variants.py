"""The weight-only variants on the graphs dynamic and static int8 leave in float: int8-weights stores any
operator's large weights as int8 (convert/int8/weights.py), int4 stores MatMul weights in 4-bit blocks
(convert/variants/int4.py). Each file is run by onnxruntime and held to fp32."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_helpers import make_model, rng, tensor
from onnx import TensorProto, helper, numpy_helper

from onnxport import runtime
from onnxport.convert import lower_precision, variants
from onnxport.convert.int8 import weights
from onnxport.convert.rescue import fallback
from onnxport.convert.variants import int4
from onnxport.errors import VariantSkipped
from onnxport.repository.variant_table import variant


def run(model: onnx.ModelProto, feeds) -> dict[str, np.ndarray]:
    session = runtime.create_session(model.SerializeToString(), label="test")
    return runtime.run(session, feeds, label="test")


def scaled_error(reference: np.ndarray, got: np.ndarray) -> float:
    return float(np.abs(reference - got).max() / np.abs(reference).max())


def ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def float_initializers(model: onnx.ModelProto, at_least: int = weights.MIN_ELEMENTS) -> list[str]:
    return [i.name for i in model.graph.initializer if i.data_type == TensorProto.FLOAT and np.prod(i.dims) >= at_least]


def gru_model() -> onnx.ModelProto:
    """A GRU cell (W, R of 3 x 64 gates x inputs) after a Gemm: neither quantizer's int8 takes a GRU."""
    r = rng(2)
    hidden, inputs = 64, 32
    return make_model(
        [
            helper.make_node("Gemm", ["x", "w_in", "b_in"], ["h0"], name="project", transB=1),
            helper.make_node("Unsqueeze", ["h0", "axes"], ["seq"], name="as_sequence"),
            helper.make_node("GRU", ["seq", "W", "R"], ["all", "y"], name="gru", hidden_size=hidden),
        ],
        {
            "w_in": r.normal(size=(inputs, 48)).astype(np.float32) * 0.2,
            "b_in": r.normal(size=inputs).astype(np.float32),
            "axes": np.array([0], np.int64),
            "W": r.normal(size=(1, 3 * hidden, inputs)).astype(np.float32) * 0.2,
            "R": r.normal(size=(1, 3 * hidden, hidden)).astype(np.float32) * 0.2,
        },
        [tensor("x", "batch", 48)],
        [tensor("y", 1, "batch", hidden)],
    )


def embedding_model(tied: bool) -> onnx.ModelProto:
    """Token ids -> an embedding table's rows -> a MatMul; tied: the same table also projects back."""
    r = rng(3)
    table = r.normal(size=(1000, 64)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["rows"], name="embed")]
    inits = {"table": table}
    if tied:
        nodes.append(helper.make_node("Transpose", ["table"], ["table_t"], name="tie", perm=[1, 0]))
        nodes.append(helper.make_node("MatMul", ["rows", "table_t"], ["y"], name="logits"))
        out = tensor("y", "batch", 1000)
    else:
        inits["w"] = r.normal(size=(64, 64)).astype(np.float32)
        nodes.append(helper.make_node("MatMul", ["rows", "w"], ["y"], name="dense"))
        out = tensor("y", "batch", 64)
    return make_model(nodes, inits, [tensor("ids", "batch", elem=TensorProto.INT64)], [out])


def matmul_stack() -> onnx.ModelProto:
    """Two MatMuls with constant 128 x 128 weights (MatMulNBits' blocks run along the 128 inputs)."""
    r = rng(4)
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"),
            helper.make_node("Relu", ["h"], ["a"], name="relu"),
            helper.make_node("MatMul", ["a", "w2"], ["y"], name="second"),
        ],
        {
            "w1": r.normal(size=(128, 128)).astype(np.float32) / 8,
            "w2": r.normal(size=(128, 128)).astype(np.float32) / 8,
        },
        [tensor("x", "batch", 128)],
        [tensor("y", "batch", 128)],
    )


# --------------------------------------------------------------------------- int8-weights


def test_int8_weights_stores_a_gru_and_a_gemm_in_int8_and_computes_in_float():
    model = gru_model()
    stored, settings = lower_precision.make_int8_weights(model)
    assert float_initializers(stored) == []
    assert settings["weights"] == "int8 per channel" and settings["weights_stored"] == 3
    assert {"GRU", "Gemm"} <= set(ops(stored)) and ops(stored).count("DequantizeLinear") == 3
    assert len(stored.SerializeToString()) < 0.3 * len(model.SerializeToString())
    feeds = {"x": rng(1).normal(size=(4, 48)).astype(np.float32)}
    assert scaled_error(run(model, feeds)["y"], run(stored, feeds)["y"]) < 0.05  # the int8 budget's max is 0.1


def test_an_embedding_table_is_gathered_as_int8_rows_not_dequantized_whole():
    model = embedding_model(tied=False)
    stored, _ = lower_precision.make_int8_weights(model)
    # Only the dense weight has a DequantizeLinear; the table's rows are cast and scaled after the Gather.
    dequantized = [n.input[0] for n in stored.graph.node if n.op_type == "DequantizeLinear"]
    assert dequantized == ["w.int8"]
    gathers = {n.input[0] for n in stored.graph.node if n.op_type == "Gather"}
    assert gathers == {"table.int8", "table.scale"}
    feeds = {"ids": np.array([0, 5, 999, 5], np.int64)}
    assert scaled_error(run(model, feeds)["y"], run(stored, feeds)["y"]) < 0.02


def test_a_tied_table_is_gathered_as_rows_and_dequantized_once_for_its_other_reader():
    model = embedding_model(tied=True)
    stored, _ = lower_precision.make_int8_weights(model)
    assert [n.input[0] for n in stored.graph.node if n.op_type == "DequantizeLinear"] == ["table.int8"]
    assert "table.int8" in {n.input[0] for n in stored.graph.node if n.op_type == "Gather"}
    feeds = {"ids": np.array([1, 2, 3], np.int64)}
    assert scaled_error(run(model, feeds)["y"], run(stored, feeds)["y"]) < 0.03


def test_the_fallbacks_nodes_keep_their_weights_in_float():
    model = gru_model()
    stored, settings = lower_precision.make_int8_weights(model, ("gru",))
    assert sorted(float_initializers(stored)) == ["R", "W"]
    assert settings["kept_float"] == ["gru"] and settings["weights_stored"] == 1
    assert variants.load(variant("int8-weights")).candidates(model) == {"project", "gru"}


def test_nothing_large_enough_is_skipped_with_the_threshold_named():
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="small")],
        {"w": np.ones((8, 4), np.float32)},
        [tensor("x", "batch", 8)],
        [tensor("y", "batch", 4)],
    )
    with pytest.raises(VariantSkipped, match="no float weight of at least 1,024 elements"):
        lower_precision.make_int8_weights(model)


def test_an_already_quantized_model_is_not_stored_again():
    model = gru_model()
    stored, _ = lower_precision.make_int8_weights(model)
    with pytest.raises(VariantSkipped, match="already quantized: 3 quantized operators"):
        lower_precision.make_int8_weights(stored)


def test_a_scale_per_output_channel_by_operator():
    w = np.stack([np.full(16, 1.0), np.full(16, 100.0)]).T.astype(np.float32)  # MatMul [K=16, N=2]
    quantized, scale = weights._quantize(w, 1)
    assert scale.tolist() == pytest.approx([1 / 127, 100 / 127])
    assert np.all(np.abs(quantized) == 127)


# --------------------------------------------------------------------------- int4


def test_int4_stores_matmul_weights_in_symmetric_4bit_blocks_of_32_at_accuracy_level_0():
    model = matmul_stack()
    stored, settings = lower_precision.make_int4(model)
    nodes = [n for n in stored.graph.node if n.op_type == "MatMulNBits"]
    assert len(nodes) == 2 and "MatMul" not in ops(stored)
    attributes = [{a.name: a.i for a in n.attribute} for n in nodes]
    # Level 0 is the attribute's default, left out as onnxruntime's quantizer leaves it.
    assert all(a["bits"] == 4 and a["block_size"] == 32 and "accuracy_level" not in a for a in attributes)
    assert all(len(n.input) == 3 for n in nodes)  # A, B, scales: no zero points (WebAssembly: 0.73x the run)
    assert settings["weights"] == "MatMul 4-bit blocks of 32, symmetric, accuracy level 0; tables 4-bit blocks of 32"
    assert settings["weights_4bit"] == 2 and settings["weights_8bit"] == 0
    assert len(stored.SerializeToString()) < 0.25 * len(model.SerializeToString())
    feeds = {"x": rng(5).normal(size=(6, 128)).astype(np.float32)}
    assert scaled_error(run(model, feeds)["y"], run(stored, feeds)["y"]) < 0.15


@pytest.mark.parametrize(
    "form",
    [int4.Form(16, False, 4, 4), int4.Form(32, True, 4, 4), int4.Form(64, True, 0, 4), int4.Form(32, True, 4, 8)],
    ids=str,
)
def test_each_int4_form_is_made_as_it_says_and_runs(form):
    model = embedding_model(tied=False)
    model.graph.initializer[0].CopyFrom(
        numpy_helper.from_array(rng(9).normal(size=(2048, 64)).astype(np.float32), "table")
    )  # above MIN_TABLE_ELEMENTS
    stored, settings = lower_precision.make_int4(model, form=form)
    matmul = next(n for n in stored.graph.node if n.op_type == "MatMulNBits")
    attributes = {a.name: a.i for a in matmul.attribute}
    assert attributes["block_size"] == form.block and attributes.get("accuracy_level", 0) == form.accuracy_level
    assert (len(matmul.input) > 3 and matmul.input[3] != "") == (not form.symmetric)  # the zero points
    assert ("GatherBlockQuantized" in ops(stored)) == (form.table_bits == 4)
    assert settings["weights"] == form.describe() and f"blocks of {form.block}," in settings["weights"]
    feeds = {"ids": np.array([0, 7, 2047], np.int64)}
    assert scaled_error(run(model, feeds)["y"], run(stored, feeds)["y"]) < 0.2


def test_int4_keeps_the_fallbacks_matmuls_in_8bit_blocks():
    model = matmul_stack()
    stored, settings = lower_precision.make_int4(model, ("second",))
    bits = {
        n.input[0]: {a.name: a.i for a in n.attribute}["bits"] for n in stored.graph.node if n.op_type == "MatMulNBits"
    }
    assert bits == {"x": 4, "a": 8}
    assert settings["weights_8bit"] == 1 and settings["kept_float"] == ["second"]
    assert settings["weights"].endswith("; 1 kept nodes in 8-bit blocks of 128")
    # The search may keep more of int4's MatMuls than of a float fallback's nodes: they stay in 8 bits.
    assert (variant("int4").rescue_share or 0) > fallback.LIMIT_SHARE
    assert variant("int8-weights").rescue_share is None
    feeds = {"x": rng(5).normal(size=(6, 128)).astype(np.float32)}
    assert scaled_error(run(model, feeds)["y"], run(stored, feeds)["y"]) < 0.15


def test_int4_stores_a_gemm_as_a_matmul_and_the_rest_as_int8():
    model = gru_model()
    stored, settings = lower_precision.make_int4(model)
    assert "MatMulNBits" in ops(stored) and "Gemm" not in ops(stored)
    assert settings["weights_4bit"] == 1 and settings["weights_stored"] == 2  # the GRU's W and R, in int8
    assert float_initializers(stored, 1024) == []
    feeds = {"x": rng(1).normal(size=(4, 48)).astype(np.float32)}
    reference, got = run(model, feeds)["y"].ravel(), run(stored, feeds)["y"].ravel()
    assert reference @ got / np.linalg.norm(reference) / np.linalg.norm(got) > 0.98  # 4 bits on 48 inputs


def test_int4_has_nothing_to_do_without_a_constant_matmul_or_table():
    r = rng(6)
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
        {"w": r.normal(size=(64, 8, 3, 3)).astype(np.float32)},
        [tensor("x", "batch", 8, 6, 6)],
        [tensor("y", "batch", 64, 4, 4)],
    )
    with pytest.raises(VariantSkipped, match="nothing to store in 4 bits"):
        lower_precision.make_int4(model)


def test_int4_stores_a_large_embedding_table_in_4bit_blocks():
    r = rng(7)
    table = r.normal(size=(2048, 64)).astype(np.float32)
    model = make_model(
        [helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")],
        {"table": table},
        [tensor("ids", "batch", elem=TensorProto.INT64)],
        [tensor("y", "batch", 64)],
    )
    stored, settings = lower_precision.make_int4(model)
    assert ops(stored) == ["GatherBlockQuantized"] and settings["weights_4bit"] == 1
    feeds = {"ids": np.array([0, 7, 2047], np.int64)}
    assert scaled_error(run(model, feeds)["y"], run(stored, feeds)["y"]) < 0.2
    assert not any(
        numpy_helper.to_array(i).dtype == np.float32 and i.dims[0] == 2048 and len(i.dims) == 2 and i.dims[1] == 64
        for i in stored.graph.initializer
    )


def test_a_weight_read_inside_if_branches_is_stored_once_in_the_main_graph():
    r = rng(8)
    then_branch = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["then_y"], name="then_matmul")],
        "then",
        [],
        [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, None)],
    )
    else_branch = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["p"], name="else_matmul"),
            helper.make_node("Neg", ["p"], ["else_y"], name="negate"),
        ],
        "else",
        [],
        [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, None)],
    )
    model = make_model(
        [helper.make_node("If", ["flag"], ["y"], name="branch", then_branch=then_branch, else_branch=else_branch)],
        {"w": r.normal(size=(64, 32)).astype(np.float32)},
        [tensor("flag", elem=TensorProto.BOOL), tensor("x", "batch", 64)],
        [tensor("y", "batch", 32)],
    )
    stored, settings = lower_precision.make_int8_weights(model)
    assert settings["weights_stored"] == 1 and ops(stored) == ["DequantizeLinear", "If"]
    for flag in (True, False):
        feeds = {"flag": np.array(flag), "x": r.normal(size=(3, 64)).astype(np.float32)}
        assert scaled_error(run(model, feeds)["y"], run(stored, feeds)["y"]) < 0.02
