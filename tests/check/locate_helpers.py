"""Shared by the --locate test modules: a tolerance, an onnxruntime run of every output, a model's node outputs."""

from __future__ import annotations

import onnx

from onnxport import runtime
from onnxport.accuracy.tolerance import Tolerance

TOL = Tolerance(abs=1e-3, rel=1e-3, top1_min=1.0, cosine_min=0.999, why="test")


def run_onnxruntime(model: onnx.ModelProto, feeds: dict) -> dict:
    session = runtime.create_session(model.SerializeToString())
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def node_outputs(model: onnx.ModelProto) -> list[str]:
    return [name for node in model.graph.node for name in node.output if name]
