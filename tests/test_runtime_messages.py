"""onnxruntime's own error messages, read (runtime_messages.py): the node, its operator, the reason on one line.

Every message here is raised by onnxruntime 1.30 on a small graph, not written by hand.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxport import runtime, runtime_messages
from onnxport.errors import ModelFileError


def model(node: onnx.NodeProto, inputs, initializers=None) -> bytes:
    graph = helper.make_graph(
        [node],
        "g",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return proto.SerializeToString()


def refused(data: bytes, feeds: dict) -> ModelFileError:
    with pytest.raises(ModelFileError) as caught:
        runtime.run(runtime.create_session(data, label="m"), feeds, label="m")
    return caught.value


def value(name, *shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape))


def test_a_kernel_s_list_is_one_line_cut_at_a_word_and_whole_in_the_detail():
    cubic = model(
        helper.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic", name="shrink"),
        [value("x", 1, 8, 8, 4), value("s", 4)],
    )
    error = refused(cubic, {"x": np.ones((1, 8, 8, 4), np.float32), "s": np.array([1, 0.5, 0.5, 1], np.float32)})
    said = error.refusal
    assert (said.node, said.operator) == ("shrink", "Resize")
    assert said.reason.startswith(
        "'Cubic' mode only supports: 2-D inputs ('Bicubic') or 4-D inputs with the "
        "corresponding outermost 2 scale values being 1"
    ), said.reason
    assert said.reason.endswith("…") and len(said.reason) <= runtime_messages.REASON_CHARS
    assert "\n" not in said.reason and "upsamplebase" not in said.reason
    assert error.detail.endswith("in the Resize operator") and "\n" not in error.detail
    assert runtime_messages.where(said) == "Resize node shrink: "


@pytest.mark.parametrize(
    "case, reason",
    [
        ("reshape", "The input tensor cannot be reshaped to the requested shape. Input shape:{5}, requested shape:{3}"),
        ("gather", "indices element out of data bounds, idx=7 must be within the inclusive range [-4,3]"),
        ("matmul", "MatMul dimension mismatch"),
    ],
)
def test_source_positions_functions_and_failed_conditions_are_left_out(case, reason):
    data, feeds, node, operator = {
        "reshape": (
            model(
                helper.make_node("Reshape", ["x", "s"], ["y"], name="rs"),
                [value("x", "n"), value("s", 1, elem=TensorProto.INT64)],
            ),
            {"x": np.ones(5, np.float32), "s": np.array([3])},
            "rs",
            "Reshape",
        ),
        "gather": (
            model(
                helper.make_node("Gather", ["t", "i"], ["y"], name="g"),
                [value("i", "n", elem=TensorProto.INT64)],
                {"t": np.ones((4, 2), np.float32)},
            ),
            {"i": np.array([7])},
            "g",
            "Gather",
        ),
        "matmul": (
            model(
                helper.make_node("MatMul", ["a", "b"], ["y"], name="mm"), [value("a", "n", "k"), value("b", "j", "m")]
            ),
            {"a": np.ones((2, 3), np.float32), "b": np.ones((4, 2), np.float32)},
            "mm",
            "MatMul",
        ),
    }[case]
    said = refused(data, feeds).refusal
    assert said == runtime_messages.Refusal(node, operator, reason)


def test_a_load_error_names_the_node_it_quotes():
    mistyped = model(helper.make_node("Relu", ["x"], ["y"], name="relu1"), [value("x", 2)])
    broken = onnx.load_from_string(mistyped)
    broken.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    with pytest.raises(runtime.LoadError) as caught:
        runtime.create_session(broken.SerializeToString(), label="m")
    said = caught.value.refusal
    assert said.node == "relu1" and said.operator is None  # the message names no operator
    assert said.reason == (
        "Type Error: Type (tensor(int64)) of output arg (y) of node (relu1) does not match "
        "expected type (tensor(float))."
    )
