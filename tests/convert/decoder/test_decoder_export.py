"""The decoder export (convert/decoder/): the file's convention, and its logits step by step against torch."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from onnx import numpy_helper

from fixtures.tiny_decoder import tiny_llama
from onnxport.convert.decoder import cache_names
from onnxport.convert.decoder.steps import DecoderSession, StepMismatch, check_steps, greedy_tokens

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


PROMPT = "The quick brown fox jumps over the lazy dog because"


def prompt_ids(folder: Path, text: str = PROMPT) -> list[int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text).ids


def test_prompt_and_cached_steps_match_torch(tiny_decoder: Path):
    result = check_steps(tiny_llama(), tiny_decoder / "model.onnx", prompt_ids(tiny_decoder), 5, tolerance=1e-4)
    assert [figure.step for figure in result.steps] == [0, 1, 2, 3, 4, 5]
    assert [figure.past for figure in result.steps[1:]] == [len(prompt_ids(tiny_decoder)) + k for k in range(5)]
    assert result.max_abs_diff <= 1e-4
    assert all(figure.argmax_agrees for figure in result.steps)
    assert len(set(result.tokens)) > 1  # the tiny model does not repeat one token


def test_greedy_tokens_equal_transformers_generate(tiny_decoder: Path):
    import torch

    prompt = prompt_ids(tiny_decoder)
    eos = json.loads((tiny_decoder / "generation.json").read_text())["eos_token_ids"]
    ours = greedy_tokens(DecoderSession(tiny_decoder / "model.onnx"), prompt, 12, eos)
    with torch.no_grad():
        generated = tiny_llama().generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones((1, len(prompt)), dtype=torch.int64),
            max_new_tokens=12,
            do_sample=False,
            eos_token_id=eos,
            pad_token_id=eos[0],
        )
    theirs = generated[0, len(prompt) :].tolist()
    assert ours == theirs
    assert len(ours) == 12


def cache_dropped(model: onnx.ModelProto, name: str) -> onnx.ModelProto:
    """The file with its past input `name` multiplied by zero: the prompt is right, every cached step wrong."""
    broken = onnx.ModelProto()
    broken.CopyFrom(model)
    for node in broken.graph.node:
        node.input[:] = [f"{name}/dropped" if value == name else value for value in node.input]
    zero = onnx.helper.make_tensor(f"{name}/zero", onnx.TensorProto.FLOAT, [], [0.0])
    broken.graph.initializer.append(zero)
    broken.graph.node.insert(0, onnx.helper.make_node("Mul", [name, zero.name], [f"{name}/dropped"]))
    return broken


def test_a_cache_the_file_ignores_is_caught_at_the_first_cached_step(tiny_decoder: Path, tmp_path: Path):
    broken = tmp_path / "broken.onnx"
    onnx.save(cache_dropped(onnx.load(str(tiny_decoder / "model.onnx")), "past_key_values.1.value"), str(broken))
    with pytest.raises(StepMismatch, match=r"at cached step 1 \(past \d+\) the logits differ .* by [\d.e-]+, expected"):
        check_steps(tiny_llama(), broken, prompt_ids(tiny_decoder), 3, tolerance=1e-4)


def test_wrong_weights_are_caught_at_the_prompt(tiny_decoder: Path, tmp_path: Path):
    model = onnx.load(str(tiny_decoder / "model.onnx"))
    weight = next(t for t in model.graph.initializer if list(t.dims) == [64, 128])  # an MLP's up projection
    values = numpy_helper.to_array(weight).copy()
    values[0, 0] += 1.0
    weight.CopyFrom(numpy_helper.from_array(values, weight.name))
    broken = tmp_path / "broken.onnx"
    onnx.save(model, str(broken))
    with pytest.raises(StepMismatch, match=r"^.*broken\.onnx: at the prompt the logits differ"):
        check_steps(tiny_llama(), broken, prompt_ids(tiny_decoder), 3, tolerance=1e-4)


def test_the_tied_embedding_is_written_once_and_batch_and_lengths_are_dynamic(tiny_decoder: Path):
    import numpy as np
    import onnxruntime as ort

    model = onnx.load(str(tiny_decoder / "model.onnx"))
    tables = [t.name for t in model.graph.initializer if sorted(t.dims) == [64, VOCAB]]
    assert len(tables) == 1, tables
    session = ort.InferenceSession(str(tiny_decoder / "model.onnx"))
    batch, past, sequence = 2, 4, 3
    feeds = {
        "input_ids": np.array([[5, 6, 7], [8, 9, 10]], dtype=np.int64),
        "attention_mask": np.ones((batch, past + sequence), dtype=np.int64),
        "position_ids": np.tile(np.arange(past, past + sequence, dtype=np.int64), (batch, 1)),
    }
    for name in cache_names.past_names(LAYERS):
        feeds[name] = np.random.default_rng(0).standard_normal((batch, KV_HEADS, past, HEAD_DIM), dtype=np.float32)
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    assert outputs["logits"].shape == (batch, sequence, VOCAB)
    assert outputs["present.1.value"].shape == (batch, KV_HEADS, past + sequence, HEAD_DIM)
    np.testing.assert_array_equal(outputs["present.1.value"][:, :, :past], feeds["past_key_values.1.value"])
