"""convert/rescue/fallback.py and node_errors.py: rank the nodes a variant hurts, keep the fewest in float."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxport.convert.rescue import fallback, node_errors

RANKING = [f"node{i}" for i in range(100)]


def search_needing(need: int | None, candidates: int = 100, limit_first: bool = False):
    calls: list[int] = []

    def attempt(kept):
        calls.append(len(kept))
        return len(kept), None if need is not None and len(kept) >= need else f"{len(kept)} kept: still outside"

    return fallback.search(RANKING, candidates, attempt, limit_first=limit_first), calls


@pytest.mark.parametrize("need", [1, 3, 5, 17, 20])
def test_the_search_finds_the_fewest_nodes_that_bring_the_variant_within_budget(need):
    found, calls = search_needing(need)
    assert found.kept == tuple(RANKING[:need]) and found.best == need
    assert len(calls) <= fallback.MAX_TRIES and calls == sorted(set(calls), key=calls.index), calls
    assert found.tries[-1]["result"] in ("within budget", f"{calls[-1]} kept: still outside")


def test_the_search_gives_up_at_its_limit_and_logs_every_try():
    found, calls = search_needing(None)
    assert found.best is None and found.kept == ()
    assert max(calls) == found.limit == 20  # 20% of 100 candidates
    record = found.record("max error 0.27 > budget 0.1")
    assert record["first_reason"] == "max error 0.27 > budget 0.1" and record["kept_float"] == []
    assert [t["kept"] for t in record["tries"]] == calls


def test_a_ranked_search_that_its_limit_leaves_outside_gives_up_after_that_one_try():
    found, calls = search_needing(None, limit_first=True)
    assert found.best is None and calls == [found.limit] == [20]
    assert [t["kept"] for t in found.record("max error 0.27 > budget 0.1")["tries"]] == [20]


@pytest.mark.parametrize("need", [1, 3, 5, 17, 20])
def test_a_ranked_search_within_at_its_limit_ends_where_the_search_without_it_does(need):
    found, calls = search_needing(need, limit_first=True)
    plain, plain_calls = search_needing(need)
    assert found.kept == plain.kept == tuple(RANKING[:need])
    assert calls == [20, *(k for k in plain_calls if k != 20)]  # the limit first, then the same sizes


def test_the_limit_is_a_share_of_the_candidates_with_a_floor():
    assert fallback.limit_for(100) == 20 and fallback.limit_for(10) == 4 and fallback.limit_for(3) == 3


def test_a_search_given_a_larger_share_keeps_up_to_it_within_its_tries():
    calls: list[int] = []

    def attempt(kept):
        calls.append(len(kept))
        return len(kept), None if len(kept) >= 9 else "outside"  # minilm's int4: 9 of 36 MatMuls in 8 bits

    found = fallback.search(RANKING[:36], 36, attempt, share=0.5)
    assert found.limit == 18 and found.kept == tuple(RANKING[:9]) and calls == [1, 2, 4, 8, 16, 12, 10, 9]


def chain_model() -> onnx.ModelProto:
    """x -> MatMul(w1) -> Relu -> MatMul(w2) -> y, named nodes."""
    rng = np.random.default_rng(0)
    w1, w2 = (numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), n) for n in ("w1", "w2"))
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="second"),
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [w1, w2],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_node_errors_rank_the_node_that_introduces_the_error_first():
    fp32 = chain_model()
    broken = onnx.ModelProto()
    broken.CopyFrom(fp32)
    w2 = broken.graph.initializer[1]
    w2.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w2) * 1.5, "w2"))  # only `second` is off
    feeds = [{"x": np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)}]
    ranking = node_errors.introduced_errors(fp32, broken, feeds)
    assert [name for name, _ in ranking] == ["second"], ranking
    assert ranking[0][1] > 0.1


def test_a_gain_after_a_renamed_value_goes_to_the_candidate_upstream():
    fp32 = chain_model()
    variant = onnx.ModelProto()
    variant.CopyFrom(fp32)
    first = variant.graph.node[0]
    first.output[0] = "h_renamed"  # as a quantizer renames a MatMul's output
    variant.graph.node[1].input[0] = "h_renamed"
    w1 = variant.graph.initializer[0]
    w1.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w1) * 1.5, "w1"))
    feeds = [{"x": np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)}]
    ranking = node_errors.introduced_errors(fp32, variant, feeds, candidates={"first", "second"})
    assert ranking and ranking[0][0] == "first", ranking
