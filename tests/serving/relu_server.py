"""A one-model repository (a Relu imported through the CLI, in well under a second) and a real server on it:
for the tests of what the server answers to hostile requests, without building the demo models."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from fixtures.servers import free_port, start_test_server
from onnxport import cli

LIMIT = 10_000  # max_request_bytes of relu_server
RELU_REQUEST = b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, -2, 3, -4]}]}'
RELU_ANSWER = [1.0, 0.0, 3.0, 0.0]


def relu() -> onnx.ModelProto:
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "relu",
        [value("x", TensorProto.FLOAT, ["n", 4])],
        [value("y", TensorProto.FLOAT, ["n", 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def relu_repository(tmp_path_factory) -> Path:
    """A repository holding the model relu (fp32 only), for this test module."""
    folder = tmp_path_factory.mktemp("relu")
    onnx.save(relu(), folder / "relu.onnx")
    root = folder / "repository"
    code = cli.main(
        ["--repository", str(root), "import", str(folder / "relu.onnx"), "--name", "relu", "--quiet", "--forms", "none"]
    )
    assert code == 0
    return root


@pytest.fixture(scope="module")
def relu_server(relu_repository, tmp_path_factory):
    """The base URL of a real `onnxport serve` on relu_repository with max_request_bytes LIMIT, for this module."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("relu-server") / "server.log"
    server = start_test_server(
        ["serve", "--repository", str(relu_repository), "--port", str(port)],
        port,
        log_path,
        env={"ONNXPORT_MAX_REQUEST_BYTES": str(LIMIT)},
    )
    yield server.base_url
    server.stop()
