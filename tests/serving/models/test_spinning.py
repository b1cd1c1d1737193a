"""intra_op_spinning: auto spins on waitress and sleeps on Ray Serve (cores shared with Ray's processes)."""

from __future__ import annotations

import pytest

from onnxport import runtime
from onnxport.serving import config, state

SPINNING = "session.intra_op.allow_spinning"


@pytest.fixture
def model_file(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
    )
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


def spins(session) -> bool:
    try:
        return session.get_session_options().get_session_config_entry(SPINNING) != "0"
    except RuntimeError:  # not set: onnxruntime's default, which spins
        return True


def test_create_session_sleeps_when_asked(model_file):
    assert spins(runtime.create_session(model_file))
    assert not spins(runtime.create_session(model_file, spinning=False))


@pytest.mark.parametrize(
    ("choice", "engine", "expected"),
    [
        ("auto", "waitress", True),
        ("auto", "ray", False),
        ("on", "ray", True),
        ("off", "waitress", False),
    ],
)
def test_the_setting_and_the_engine_decide(model_file, tmp_path, choice, engine, expected):
    settings = config.load({"repository": str(tmp_path), "intra_op_spinning": choice}, environ={})
    pool = state.build(settings, engine=engine).sessions
    assert spins(pool.get("0" * 64, model_file, "relu")) is expected


def test_a_bad_value_names_the_choices():
    with pytest.raises(config.ConfigError, match="expected auto, on or off"):
        config.load({"intra_op_spinning": "sometimes"}, environ={})
