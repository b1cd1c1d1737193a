"""The decoder export (convert/decoder/): the file's convention, and its logits step by step against torch."""

from __future__ import annotations

from pathlib import Path

import onnx

from onnxport.convert.decoder import cache_names

LAYERS, KV_HEADS, HEAD_DIM, VOCAB = 2, 2, 16, 49152


def dims(value: onnx.ValueInfoProto) -> list[str | int]:
    return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]


def test_the_file_follows_the_decoder_convention(tiny_decoder: Path):
    model = onnx.load(str(tiny_decoder / "model.onnx"))
    assert model.opset_import[0].version == 17
    assert {o.domain for o in model.opset_import} <= {"", "ai.onnx"}
    inputs = {v.name: v for v in model.graph.input}
    outputs = {v.name: v for v in model.graph.output}
    assert list(inputs) == cache_names.input_names(LAYERS)
    assert list(outputs) == cache_names.output_names(LAYERS)
    int64, float32 = onnx.TensorProto.INT64, onnx.TensorProto.FLOAT
    assert dims(inputs["input_ids"]) == ["batch", "sequence"]
    assert dims(inputs["attention_mask"]) == ["batch", "past_sequence + sequence"]
    assert dims(inputs["position_ids"]) == ["batch", "sequence"]
    assert {inputs[n].type.tensor_type.elem_type for n in ("input_ids", "attention_mask", "position_ids")} == {int64}
    assert dims(outputs["logits"]) == ["batch", "sequence", VOCAB]
    for i in range(LAYERS):
        for part in ("key", "value"):
            past, present = inputs[f"past_key_values.{i}.{part}"], outputs[f"present.{i}.{part}"]
            assert dims(past) == ["batch", KV_HEADS, "past_sequence", HEAD_DIM]
            assert dims(present) == ["batch", KV_HEADS, "past_sequence + sequence", HEAD_DIM]
            assert past.type.tensor_type.elem_type == present.type.tensor_type.elem_type == float32
    assert sorted(p.name for p in tiny_decoder.iterdir()) == [
        "chat_template.jinja",
        "generation.json",
        "model.onnx",
        "tokenizer.json",
    ]
