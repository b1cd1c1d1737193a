"""check/locate.py on a small hand-built model: what debug_model exposes, and how first_divergence compares."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from locate_helpers import TOL, node_outputs, run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

from onnxport import tensor_json
from onnxport.accuracy.tolerance import Tolerance
from onnxport.check import locate


def small_model() -> onnx.ModelProto:
    """x -> Relu -> Mul(2) -> Add(b) -> Softmax -> y, and ArgMax(y) -> label (int64), Greater -> mask (bool).

    One node ("the add") has no name. Graph outputs y, label, mask.
    """
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    bias = numpy_helper.from_array(np.arange(4, dtype=np.float32) / 10, "bias")
    half = numpy_helper.from_array(np.array(0.25, np.float32), "half")
    nodes = [
        helper.make_node("Relu", ["x"], ["relu_out"], name="relu"),
        helper.make_node("Mul", ["relu_out", "two"], ["mul_out"], name="double"),
        helper.make_node("Add", ["mul_out", "bias"], ["add_out"]),  # unnamed
        helper.make_node("Softmax", ["add_out"], ["y"], name="softmax", axis=-1),
        helper.make_node("ArgMax", ["y"], ["label"], name="argmax", axis=-1, keepdims=0),
        helper.make_node("Greater", ["y", "half"], ["mask"], name="greater"),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4]),
            helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", 4]),
        ],
        [two, bias, half],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="module")
def values() -> dict[str, np.ndarray]:
    """Every intermediate value of small_model() on a fixed input, from onnxruntime."""
    x = np.array([[-1.0, 0.5, 2.0, 0.0], [3.0, -2.0, 0.25, 1.0], [0.1, 0.2, 0.3, 0.4]], np.float32)
    return {"x": x, **run_onnxruntime(locate.debug_model(small_model()), {"x": x})}


def copy_of(values: dict, **changes) -> dict:
    out = {k: v.copy() for k, v in values.items() if k != "x"}
    out.update(changes)
    return out


# --------------------------------------------------------------------------- debug_model


def test_debug_model_exposes_every_node_output_after_the_models_own_outputs():
    model = small_model()
    before = model.SerializeToString()
    debug = locate.debug_model(model)
    outputs = [o.name for o in debug.graph.output]
    assert outputs[:3] == ["y", "label", "mask"]
    assert sorted(outputs) == sorted(set(outputs)), "an output is listed twice"
    assert set(outputs) == set(node_outputs(model))
    # Extra outputs come in graph order, with their element types.
    assert outputs[3:] == [n for n in node_outputs(model) if n not in ("y", "label", "mask")]
    types = {o.name: o.type.tensor_type.elem_type for o in debug.graph.output}
    assert types["relu_out"] == types["add_out"] == TensorProto.FLOAT
    assert model.SerializeToString() == before, "debug_model changed the model it was given"
    assert list(debug.graph.node) == list(model.graph.node)


def test_debug_model_values_are_the_models_intermediate_values(values):
    x = values["x"]
    relu = np.maximum(x, 0)
    expected_add = relu * 2 + np.arange(4, dtype=np.float32) / 10
    np.testing.assert_array_equal(values["relu_out"], relu)
    np.testing.assert_allclose(values["add_out"], expected_add, rtol=1e-6)
    # The model's own outputs are what the model alone gives.
    plain = run_onnxruntime(small_model(), {"x": x})
    for name in ("y", "label", "mask"):
        np.testing.assert_array_equal(values[name], plain[name])
    assert values["label"].dtype == np.int64 and values["mask"].dtype == np.bool_


def test_reference_outputs_run_the_debug_model_on_the_server_runtime(tmp_path, values):
    path = tmp_path / "debug.onnx"
    path.write_bytes(locate.debug_model(small_model()).SerializeToString())
    reference = locate.reference_outputs(path, {"x": values["x"]})
    assert set(reference) == set(node_outputs(small_model()))
    for name, value in reference.items():
        np.testing.assert_allclose(value, values[name], rtol=1e-6, err_msg=name)


def test_feeds_and_outputs_survive_the_trip_through_the_page(values):
    """tensor_json.encode is what the page decodes; tensor_json.decode reads what runDebugModel encodes."""
    tensors = {
        "x": values["x"],
        "label": values["label"],
        "mask": values["mask"],
        "scalar": np.array(1.5, np.float32),
        "h": np.arange(6, dtype=np.float16).reshape(2, 3),
    }
    encoded = tensor_json.encode(tensors)
    assert json.loads(json.dumps(encoded)) == encoded
    assert encoded["mask"]["dtype"] == "bool" and encoded["label"]["dtype"] == "int64"
    decoded = tensor_json.decode(encoded)
    for name, value in tensors.items():
        assert decoded[name].dtype == value.dtype and decoded[name].shape == value.shape, name
        np.testing.assert_array_equal(decoded[name], value)


# --------------------------------------------------------------------------- first_divergence


def test_all_equal_is_no_divergence(values):
    assert locate.first_divergence(small_model(), copy_of(values), copy_of(values), TOL) is None


def test_differences_within_tolerance_are_no_divergence(values):
    browser = copy_of(values)
    browser["relu_out"] = browser["relu_out"] + np.float32(0.9e-3)  # within abs
    browser["add_out"] = browser["add_out"] * np.float32(1.0008)  # the large ones beyond abs, within the ratio
    assert np.abs(browser["add_out"] - values["add_out"]).max() > TOL.abs
    assert locate.first_divergence(small_model(), copy_of(values), browser, TOL) is None


def test_the_earliest_node_in_graph_order_is_named_not_the_first_key(values):
    reference = copy_of(values)
    browser = copy_of(values)
    browser["y"] = browser["y"] + np.float32(0.5)  # a later node diverges more
    browser["mul_out"] = browser["mul_out"].copy()
    browser["mul_out"][1, 2] += np.float32(0.01)  # beyond abs and beyond the 1.001 ratio
    browser["mul_out"][2, 3] += np.float32(0.02)
    # Keys in anti-graph order: the answer must come from the graph, not the dicts.
    browser = dict(reversed(list(browser.items())))
    reference = dict(reversed(list(reference.items())))

    found = locate.first_divergence(small_model(), reference, browser, TOL)
    assert found is not None
    assert found["node"] == "double" and found["op_type"] == "Mul" and found["node_index"] == 1
    assert found["output"] == "mul_out"
    assert found["index"] == [1, 2]  # the first element beyond tolerance, in row-major order
    assert found["expected"] == pytest.approx(float(values["mul_out"][1, 2]))
    assert found["got"] == pytest.approx(float(values["mul_out"][1, 2]) + 0.01, rel=1e-6)
    assert found["mismatches"] == 2
    assert found["max_abs"] == pytest.approx(0.02, rel=1e-3)
    assert json.loads(json.dumps(found, allow_nan=False)) == found


def test_an_unnamed_node_is_named_by_its_index(values):
    browser = copy_of(values)
    browser["add_out"] = browser["add_out"] + np.float32(1.0)
    found = locate.first_divergence(small_model(), copy_of(values), browser, TOL)
    assert found["node"] == "#2" and found["op_type"] == "Add" and found["output"] == "add_out"
    assert found["index"] == [0, 0]


def test_values_the_browser_did_not_return_are_skipped(values):
    browser = copy_of(values)
    del browser["relu_out"]
    browser["relu_out_unused"] = np.zeros(1, np.float32)
    browser["mul_out"] = browser["mul_out"] + np.float32(1.0)
    found = locate.first_divergence(small_model(), copy_of(values), browser, TOL)
    assert found["output"] == "mul_out"


def test_values_the_reference_lacks_are_skipped(values):
    reference = copy_of(values)
    del reference["mul_out"]
    browser = copy_of(values)
    browser["mul_out"] = browser["mul_out"] + np.float32(1.0)
    browser["y"] = browser["y"] + np.float32(1.0)
    found = locate.first_divergence(small_model(), reference, browser, TOL)
    assert found["output"] == "y" and found["node"] == "softmax"


def test_nan_equals_nan(values):
    reference = copy_of(values)
    browser = copy_of(values)
    reference["relu_out"][0, 1] = browser["relu_out"][0, 1] = np.nan
    reference["add_out"][:] = browser["add_out"][:] = np.nan  # every element NaN on both sides
    assert locate.first_divergence(small_model(), reference, browser, TOL) is None


def test_nan_where_the_reference_is_finite_diverges(values):
    browser = copy_of(values)
    browser["mul_out"][0, 2] = np.nan
    found = locate.first_divergence(small_model(), copy_of(values), browser, TOL)
    assert found["output"] == "mul_out" and found["index"] == [0, 2]
    assert found["got"] == "nan" and found["expected"] == pytest.approx(float(values["mul_out"][0, 2]))


def test_a_finite_value_where_the_reference_is_nan_diverges(values):
    reference = copy_of(values)
    reference["relu_out"][1, 0] = np.nan
    found = locate.first_divergence(small_model(), reference, copy_of(values), TOL)
    assert found["output"] == "relu_out" and found["index"] == [1, 0] and found["expected"] == "nan"


def test_infinities_equal_only_the_same_infinity(values):
    reference = copy_of(values)
    browser = copy_of(values)
    reference["relu_out"][0, 0] = browser["relu_out"][0, 0] = np.inf
    reference["mul_out"][0, 0] = browser["mul_out"][0, 0] = -np.inf
    assert locate.first_divergence(small_model(), reference, browser, TOL) is None
    browser["mul_out"][0, 0] = np.inf
    found = locate.first_divergence(small_model(), reference, browser, TOL)
    assert found["output"] == "mul_out" and found["expected"] == "-inf" and found["got"] == "inf"
    browser = copy_of(values)
    browser["add_out"][2, 1] = np.inf  # inf where the reference is finite
    found = locate.first_divergence(small_model(), copy_of(values), browser, TOL)
    assert found["output"] == "add_out" and found["index"] == [2, 1] and found["got"] == "inf"


def test_opposite_signs_never_pass_the_ratio_rule(values):
    reference = copy_of(values)
    browser = copy_of(values)
    reference["relu_out"][0, 1] = np.float32(1e-2)
    browser["relu_out"][0, 1] = np.float32(-1e-2)
    ratio_only = Tolerance(abs=0.0, rel=1e9, top1_min=1.0, cosine_min=1.0, why="any ratio of the same sign")
    found = locate.first_divergence(small_model(), reference, browser, ratio_only)
    assert found["output"] == "relu_out" and found["index"] == [0, 1]
    browser["relu_out"][0, 1] = np.float32(3e-2)  # same sign: the ratio 3 is within 1e9
    assert locate.first_divergence(small_model(), reference, browser, ratio_only) is None


def test_integer_outputs_must_be_exact_whatever_the_tolerance(values):
    loose = Tolerance(abs=100.0, rel=100.0, top1_min=0.0, cosine_min=0.0, why="anything goes for floats")
    browser = copy_of(values)
    browser["y"] = browser["y"] + np.float32(5.0)  # within the loose tolerance
    browser["label"] = browser["label"].copy()
    browser["label"][2] = (browser["label"][2] + 1) % 4
    found = locate.first_divergence(small_model(), copy_of(values), browser, loose)
    assert found["node"] == "argmax" and found["op_type"] == "ArgMax" and found["output"] == "label"
    assert found["index"] == [2]
    assert found["expected"] == int(values["label"][2]) and found["got"] == int(browser["label"][2])
    assert isinstance(found["expected"], int)


def test_bool_outputs_must_be_exact(values):
    loose = Tolerance(abs=100.0, rel=100.0, top1_min=0.0, cosine_min=0.0, why="loose")
    browser = copy_of(values)
    browser["mask"] = ~browser["mask"]
    found = locate.first_divergence(small_model(), copy_of(values), browser, loose)
    assert found["node"] == "greater" and found["output"] == "mask" and found["index"] == [0, 0]
    assert found["expected"] == bool(values["mask"][0, 0]) and found["got"] == (not values["mask"][0, 0])


def test_a_shape_difference_diverges_and_says_so(values):
    browser = copy_of(values)
    browser["relu_out"] = browser["relu_out"][:2]
    found = locate.first_divergence(small_model(), copy_of(values), browser, TOL)
    assert found["node"] == "relu" and found["output"] == "relu_out"
    assert "[2, 4]" in found["reason"] and "[3, 4]" in found["reason"]


def test_float16_values_are_compared_as_floats(values):
    reference = {"relu_out": values["relu_out"].astype(np.float16)}
    browser = {"relu_out": reference["relu_out"].copy()}
    assert locate.first_divergence(small_model(), reference, browser, TOL) is None
    browser["relu_out"][1, 1] = np.float16(7.0)
    found = locate.first_divergence(small_model(), reference, browser, TOL)
    assert found["index"] == [1, 1] and found["got"] == 7.0


@pytest.mark.parametrize("got", [np.nan, np.inf], ids=["nan", "inf"])
def test_a_divergence_whose_only_difference_is_not_finite_is_strict_json(got):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph)
    found = locate.first_divergence(model, {"y": np.array([1.0], np.float32)}, {"y": np.array([got], np.float32)}, TOL)
    assert found["index"] == [0] and found["got"] == str(got)
    json.dumps(found, allow_nan=False)
