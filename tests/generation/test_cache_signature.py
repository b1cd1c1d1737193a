"""generation/cache.py: a decoder's key/value cache found by name in onnxruntime sessions of small files, or
declared; a file without one, or with one that does not fit, is a one-line error naming what is missing."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from fixtures.script_decoder import script_table, write_script_decoder
from onnxport import runtime
from onnxport.errors import ModelFileError
from onnxport.generation.cache import CacheSignature, LayerCache, read_signature, signature_of_model


def session_signature(path, **kwargs) -> CacheSignature:
    session = runtime.create_session(path)
    return read_signature(session.get_inputs(), session.get_outputs(), **kwargs)


@pytest.fixture(scope="module")
def decoders(tmp_path_factory):
    folder = tmp_path_factory.mktemp("decoders")
    table = script_table(8, 16, {})
    return {
        names: write_script_decoder(folder / f"{names}.onnx", table, layers=3, heads=2, head_dim=5, names=names)
        for names in ("optimum", "ort", "custom")
    }


def test_the_optimum_names_are_paired_layer_by_layer(decoders):
    signature = session_signature(decoders["optimum"])
    assert signature.layers[0] == LayerCache(
        ("past_key_values.0.key", "present.0.key"), ("past_key_values.0.value", "present.0.value")
    )
    assert len(signature.layers) == 3
    assert (signature.kv_heads, signature.head_dim, signature.element) == (2, 5, "float32")
    assert signature.has_position_ids and signature.has_attention_mask
    assert signature.pairs[-1] == ("past_key_values.2.value", "present.2.value")


def test_onnxruntimes_past_key_names_are_found_too(decoders):
    signature = session_signature(decoders["ort"])
    assert signature.layers[2] == LayerCache(("past_key_2", "present_key_2"), ("past_value_2", "present_value_2"))


def test_the_graph_gives_the_same_signature_as_the_session(decoders):
    for path in decoders.values():
        if path.stem != "custom":
            assert signature_of_model(onnx.load(str(path))) == session_signature(path)


def test_names_no_rule_finds_are_an_error_naming_the_inputs(decoders):
    with pytest.raises(ModelFileError) as caught:
        session_signature(decoders["custom"])
    assert str(caught.value) == (
        "model.onnx has no key/value cache: no input named past_key_values.0.key or past_key_0 (inputs: input_ids, "
        "attention_mask, position_ids, cache_in_0_key, cache_in_0_value, cache_in_1_key, cache_in_1_value, "
        "cache_in_2_key, cache_in_2_value)"
    )


def test_a_declared_spec_pairs_them_in_layer_order_key_before_value(decoders):
    declared = {f"cache_in_{i}_{k}": f"cache_out_{i}_{k}" for i in range(3) for k in ("key", "value")}
    signature = session_signature(decoders["custom"], declared=declared)
    assert signature.layers[1] == LayerCache(
        ("cache_in_1_key", "cache_out_1_key"), ("cache_in_1_value", "cache_out_1_value")
    )
    with pytest.raises(
        ModelFileError, match=r"declared cache output cache_out_9_key is not an output \(outputs: logits"
    ):
        session_signature(decoders["custom"], declared={**declared, "cache_in_0_key": "cache_out_9_key"})


def test_a_declared_spec_overrides_the_names(decoders):
    # The optimum file read with its pairs declared the other way round: key and value swapped.
    declared = {}
    for i in range(3):
        declared[f"past_key_values.{i}.value"] = f"present.{i}.value"
        declared[f"past_key_values.{i}.key"] = f"present.{i}.key"
    signature = session_signature(decoders["optimum"], declared=declared)
    assert signature.layers[0].key == ("past_key_values.0.value", "present.0.value")


def graph_file(tmp_path, inputs, outputs, nodes, name="plain.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def test_a_file_without_a_cache_is_a_one_line_error(tmp_path):
    path = graph_file(
        tmp_path,
        [vi("input_ids", TensorProto.INT64, ["b", "s"]), vi("attention_mask", TensorProto.INT64, ["b", "s"])],
        [vi("logits", TensorProto.INT64, ["b", "s"])],
        [helper.make_node("Add", ["input_ids", "attention_mask"], ["logits"])],
    )
    with pytest.raises(ModelFileError) as caught:
        session_signature(path)
    assert str(caught.value) == (
        "model.onnx has no key/value cache: no input named past_key_values.0.key or past_key_0 "
        "(inputs: input_ids, attention_mask)"
    )


def test_a_file_without_input_ids_or_logits_is_no_decoder(tmp_path):
    path = graph_file(
        tmp_path,
        [vi("x", TensorProto.FLOAT, [1, 2])],
        [vi("y", TensorProto.FLOAT, [1, 2])],
        [helper.make_node("Relu", ["x"], ["y"])],
    )
    with pytest.raises(ModelFileError, match=r"^model.onnx is not a decoder: no input named input_ids \(inputs: x\)$"):
        session_signature(path)


def cached_file(
    tmp_path, past_shape, present_shape, *, present_name="present.0.key", extra=(), elem=TensorProto.FLOAT, graph=False
):
    """input_ids -> logits, and one layer whose key and value presents are their pasts (Identity); its signature
    read from a session, or from the graph as written (onnxruntime's shape inference leaves out a dimension that
    differs between a past and its present)."""
    inputs = [vi("input_ids", TensorProto.INT64, ["b", "s"]), *extra]
    outputs = [vi("logits", TensorProto.INT64, ["b", "s"])]
    nodes = [helper.make_node("Identity", ["input_ids"], ["logits"])]
    for kind, present in (("key", present_name), ("value", "present.0.value")):
        inputs.append(vi(f"past_key_values.0.{kind}", elem, past_shape))
        outputs.append(vi(present, elem, present_shape))
        nodes.append(helper.make_node("Identity", [f"past_key_values.0.{kind}"], [present]))
    path = graph_file(tmp_path, inputs, outputs, nodes)
    return signature_of_model(onnx.load(str(path))) if graph else session_signature(path)


def test_a_past_without_its_present_names_both(tmp_path):
    with pytest.raises(ModelFileError) as caught:
        cached_file(tmp_path, ["b", 2, "p", 4], ["b", 2, "p", 4], present_name="kv_out_0")
    assert str(caught.value) == (
        "model.onnx: input past_key_values.0.key has no present output: expected present.0.key or "
        "present_key_values.0.key (outputs: logits, kv_out_0, present.0.value)"
    )


def test_shapes_that_disagree_or_are_not_fixed_are_errors(tmp_path):
    with pytest.raises(
        ModelFileError, match=r"cache tensor present.0.key has kv heads, head dim, type 3, 4, float32; "
    ):
        cached_file(tmp_path, ["b", 2, "p", 4], ["b", 3, "p", 4], graph=True)
    with pytest.raises(ModelFileError, match=r"has shape \['b', 2, 'p'\], expected 4 dimensions"):
        cached_file(tmp_path, ["b", 2, "p"], ["b", 2, "p"])
    with pytest.raises(ModelFileError, match=r"has no fixed kv heads and head dim"):
        cached_file(tmp_path, ["b", "heads", "p", 4], ["b", "heads", "p", 4])
    with pytest.raises(ModelFileError, match=r"is int32, expected float32 or float16"):
        cached_file(tmp_path, ["b", 2, "p", 4], ["b", 2, "p", 4], elem=TensorProto.INT32)


def test_float16_caches_are_read_and_unknown_inputs_refused(tmp_path):
    assert cached_file(tmp_path, ["b", 2, "p", 4], ["b", 2, "p", 4], elem=TensorProto.FLOAT16).element == "float16"
    with pytest.raises(ModelFileError) as caught:
        cached_file(tmp_path, ["b", 2, "p", 4], ["b", 2, "p", 4], extra=[vi("use_cache_branch", TensorProto.BOOL, [1])])
    assert str(caught.value) == (
        "model.onnx has inputs a decoder step cannot feed: use_cache_branch (it feeds input_ids, attention_mask, "
        "position_ids and the past key/value cache)"
    )
