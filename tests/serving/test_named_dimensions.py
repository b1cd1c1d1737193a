"""Inputs that share a named dimension must agree on its size: onnxruntime would broadcast [1, 8] against
[8, 1] and answer for a batch nobody sent. A real model through `onnxport import` and the app."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fixtures.servers import buffered_client
from onnxport.serving.app import create_app


def two_input_model() -> onnx.ModelProto:
    """y = ids + mask, both [batch, sequence] float32 (minilm's input_ids and attention_mask, in small)."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["ids", "mask"], ["y"], name="add")],
        "masked",
        [
            helper.make_tensor_value_info("ids", TensorProto.FLOAT, ["batch", "sequence"]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture
def client(imported_repository):
    root = imported_repository(two_input_model(), "masked")
    return buffered_client(create_app({"repository": root}))


def infer(client, ids_shape, mask_shape):
    body = {
        "inputs": [
            {"name": "ids", "shape": ids_shape, "datatype": "FP32", "data": [1.0] * int(np.prod(ids_shape))},
            {"name": "mask", "shape": mask_shape, "datatype": "FP32", "data": [1.0] * int(np.prod(mask_shape))},
        ]
    }
    return client.post("/v2/models/masked/infer", data=json.dumps(body), content_type="application/json")


def test_agreeing_shapes_run(client):
    response = infer(client, [2, 3], [2, 3])
    assert response.status_code == 200, response.data
    assert response.get_json()["outputs"][0]["shape"] == [2, 3]


@pytest.mark.parametrize(
    ("ids_shape", "mask_shape", "dim", "axes"),
    [
        ([1, 8], [8, 1], "batch", ("axis 0", "axis 0")),  # onnxruntime alone broadcasts this to [8, 8]
        ([2, 3], [2, 4], "sequence", ("axis 1", "axis 1")),
    ],
)
def test_a_named_dimension_that_disagrees_is_a_400_naming_both_inputs(
    client, assert_json_error, ids_shape, mask_shape, dim, axes
):
    message = assert_json_error(infer(client, ids_shape, mask_shape), 400, "'ids'", "'mask'", repr(dim), *axes)
    assert "onnxruntime" not in message
