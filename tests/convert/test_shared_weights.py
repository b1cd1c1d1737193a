"""convert/int8/shared_weights.py: identical weights in one graph or in several branches are stored once."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from graph_helpers import make_model, rng, tensor
from onnx import helper, numpy_helper

from onnxport.convert import graph as graphs
from onnxport.convert.int8.shared_weights import share_identical_initializers


def branch(name: str, weight: np.ndarray) -> onnx.GraphProto:
    n = len(weight)
    """x @ w twice, with two copies of w (what the quantizers leave for a weight read twice)."""
    nodes = [
        helper.make_node("MatMul", ["x", f"{name}_w0"], [f"{name}_h"], name=f"{name}_mm0"),
        helper.make_node("MatMul", [f"{name}_h", f"{name}_w1"], [f"{name}_y"], name=f"{name}_mm1"),
    ]
    inits = [numpy_helper.from_array(weight, f"{name}_w0"), numpy_helper.from_array(weight.copy(), f"{name}_w1")]
    return helper.make_graph(nodes, name, [], [tensor(f"{name}_y", 2, n)], inits)


def if_model(weight: np.ndarray, other: np.ndarray) -> onnx.ModelProto:
    n = len(weight)
    node = helper.make_node(
        "If", ["c"], ["y"], name="if", then_branch=branch("then", weight), else_branch=branch("else", other)
    )
    return make_model([node], {}, [tensor("c", elem=onnx.TensorProto.BOOL), tensor("x", 2, n)], [tensor("y", 2, n)])


def run(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def stored(model: onnx.ModelProto) -> list[str]:
    return sorted(i.name for g in graphs.graphs(model.graph) for i in g.initializer)


def test_copies_in_one_branch_and_across_branches_become_one_in_the_graph_that_holds_them():
    weight = rng(1).standard_normal((32, 32)).astype(np.float32)
    model = if_model(weight, weight.copy())  # four copies: two per branch
    feeds = {"x": rng(2).standard_normal((2, 32)).astype(np.float32)}
    expected = {c: run(model, {**feeds, "c": np.array(c)}) for c in (True, False)}

    saved = share_identical_initializers(model)

    onnx.checker.check_model(model, full_check=True)
    assert 3 * weight.nbytes <= saved < 3 * weight.nbytes + 100
    assert [i.name for i in model.graph.initializer] == stored(model)  # one, in the graph holding both branches
    assert len(stored(model)) == 1 and stored(model)[0].endswith("_w0_shared")
    for c in (True, False):
        np.testing.assert_array_equal(run(model, {**feeds, "c": np.array(c)}), expected[c])


def test_different_weights_stay_apart_and_small_ones_are_left_alone():
    a, b = (rng(seed).standard_normal((32, 32)).astype(np.float32) for seed in (1, 2))
    model = if_model(a, b)
    assert 2 * a.nbytes <= share_identical_initializers(model) < 2 * a.nbytes + 100
    assert stored(model) == ["else_w0_shared", "then_w0_shared"]  # one per branch, each to its branch
    assert not model.graph.initializer
    tiny = if_model(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))  # 16 bytes: not worth moving
    assert share_identical_initializers(tiny) == 0 and len(stored(tiny)) == 4
