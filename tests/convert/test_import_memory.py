"""Import memory: the value-size probe, the error-per-node measurement in pieces, the fp16 overflow probe.

The corpus test (test_corpus.py) bounds each real import's peak RSS; these check, on small graphs,
that the memory-bounded paths give what exposing every value at once gave.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import make_model, rng, tensor
from onnx import helper

from onnxport.convert import lower_precision
from onnxport.convert.fp16 import overflow as fp16_overflow
from onnxport.convert.rescue import node_errors, value_sizes


def chain_model():
    """x [N, 8] -> MatMul (8 -> 64) -> Relu -> MatMul (64 -> 8) -> Relu -> MatMul (8 -> 4):
    the 64-wide value is the largest."""
    r = rng(3)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="first"),
        helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
        helper.make_node("MatMul", ["r1", "w2"], ["h2"], name="second"),
        helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
        helper.make_node("MatMul", ["r2", "w3"], ["y"], name="third"),
    ]
    weights = {
        "w1": r.normal(size=(8, 64)).astype(np.float32),
        "w2": r.normal(size=(64, 8)).astype(np.float32) / 8,
        "w3": r.normal(size=(8, 4)).astype(np.float32),
    }
    return make_model(nodes, weights, [tensor("x", "n", 8)], [tensor("y", "n", 4)])


def feeds(rows: int = 16, seed: int = 0):
    return [{"x": rng(seed + k).normal(size=(rows, 8)).astype(np.float32)} for k in range(2)]


def test_value_bytes_and_largest_value_on_the_feeds():
    model = chain_model()
    sizes = value_sizes.value_bytes(model, feeds(16))
    assert sizes[0] == {"h1": 16 * 64 * 4, "r1": 16 * 64 * 4, "h2": 16 * 8 * 4, "r2": 16 * 8 * 4, "y": 16 * 4 * 4}
    assert value_sizes.largest_value(model, [feeds(16)[0], *feeds(100)[:1]]) == ("h1", 100 * 64 * 4)


def test_pieces_cut_in_graph_order_within_the_budget(monkeypatch):
    monkeypatch.setattr(node_errors, "PIECE_MIN_BYTES", 0)
    monkeypatch.setattr(node_errors, "PIECE_FACTOR", 1)
    sizes = {"a": 10, "b": 4, "c": 5, "d": 10}
    assert node_errors._pieces(["a", "b", "c", "d"], sizes) == [{"a"}, {"b", "c"}, {"d"}]
    assert node_errors._pieces(["a", "b", "unknown"], sizes) == [{"a"}, {"b"}, {"unknown"}]  # unknown: the largest
    assert node_errors._pieces(["a", "b"], {}) == [{"a", "b"}]  # no sizes: all at once
    monkeypatch.setattr(node_errors, "PIECE_MIN_BYTES", 100)
    assert node_errors._pieces(["a", "b", "c", "d"], sizes) == [{"a", "b", "c", "d"}]


@pytest.mark.parametrize("precision", ["fp16", "int8-static"])
def test_errors_measured_in_pieces_rank_as_all_at_once(monkeypatch, precision):
    model, golden = chain_model(), feeds(32)
    if precision == "fp16":
        variant, _ = lower_precision.make_fp16(model, golden)
        candidates = None
    else:
        variant, _ = lower_precision.make_int8_static(model, golden)
        candidates = {"first", "second", "third"}
    at_once = node_errors.introduced_errors(model, variant, golden, candidates)
    monkeypatch.setattr(node_errors, "PIECE_MIN_BYTES", 0)
    monkeypatch.setattr(node_errors, "PIECE_FACTOR", 1)  # one value a piece
    in_pieces = node_errors.introduced_errors(model, variant, golden, candidates)
    assert at_once, "the variant should introduce some error"
    assert [n for n, _ in in_pieces] == [n for n, _ in at_once]
    np.testing.assert_allclose([e for _, e in in_pieces], [e for _, e in at_once], rtol=1e-6)


def test_overflow_probe_peaks_without_exposing_values():
    """Peaks from in-graph reductions: the largest magnitude, inf for a non-finite entry, none for an empty value."""
    nodes = [
        helper.make_node("Mul", ["x", "big"], ["scaled"], name="scale"),  # past fp16's range
        helper.make_node("Log", ["x"], ["logged"], name="log"),  # log of a negative: NaN
        helper.make_node("Slice", ["x", "zero", "zero", "zero"], ["empty"], name="slice"),
        helper.make_node("Abs", ["x"], ["y"], name="abs"),
    ]
    consts = {"big": np.float32(1e5), "zero": np.array([0], np.int64)}
    model = make_model(
        nodes,
        consts,
        [tensor("x", 2, 3)],
        [tensor("scaled", 2, 3), tensor("logged", 2, 3), tensor("empty", 0, 3), tensor("y", 2, 3)],
    )
    x = np.array([[1, -2, 0.5], [0.25, 3, -1]], np.float32)
    hot, peaks = fp16_overflow._overflow(model, [{"x": x}])
    assert peaks["x"] == 3.0 and peaks["y"] == 3.0
    assert peaks["scaled"] == pytest.approx(3e5)
    assert peaks["logged"] == float("inf")
    assert "empty" not in peaks
    assert {"scale", "log"} <= hot and "abs" not in hot
