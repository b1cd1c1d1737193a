"""The generation runtime on the tiny decoder (tests/fixtures/tiny_decoder.py): a seeded random Llama exported to a
decoder folder with SmolLM2's real tokenizer and chat template. The cache gives the logits a full recompute
gives, and a greedy Generation gives the tokens transformers' generate gives from the same weights."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from fixtures.tiny_decoder import tiny_llama
from onnxport.errors import ModelFileError
from onnxport.generation.decoder_folder import DecoderFolder
from onnxport.generation.loop import Finish, Generation
from onnxport.generation.sampling import Sampling

PROMPTS = ["The capital of France is", "Once upon a time", "def main():"]


@pytest.fixture(scope="module")
def folder(tiny_decoder):
    return DecoderFolder.open(tiny_decoder, threads=1)


def test_a_step_after_a_prompt_is_step_alls_last_row(folder):
    ids = folder.tokenizer.encode(PROMPTS[0])
    last = folder.decoder.step(ids, folder.decoder.new_cache())
    every = folder.decoder.step_all(ids, folder.decoder.new_cache())
    assert every.shape == (len(ids), 49152)
    np.testing.assert_allclose(last, every[-1], rtol=0, atol=1e-5)


def test_each_cached_step_gives_what_a_full_recompute_without_cache_gives(folder):
    decoder = folder.decoder
    gen = Generation(folder, folder.tokenizer.encode(PROMPTS[1]), Sampling(max_new_tokens=12))
    cache = decoder.new_cache()
    sequence = list(gen.prompt_ids)
    logits = decoder.step(sequence, cache)
    for token in [*gen, None]:
        recomputed = decoder.step_all(sequence, decoder.new_cache())[-1]
        np.testing.assert_allclose(logits, recomputed, rtol=0, atol=1e-4)
        if token is None:
            break
        assert token.token_id == int(np.argmax(recomputed))
        sequence.append(token.token_id)
        logits = decoder.step([token.token_id], cache)
    assert cache.length == len(sequence)


def test_greedy_generation_is_transformers_generate_on_the_same_weights(folder):
    import torch

    model = tiny_llama()
    for prompt in PROMPTS:
        ids = folder.tokenizer.encode(prompt)
        gen = Generation(folder, ids, Sampling(max_new_tokens=24))
        ours = [p.token_id for p in gen]
        with torch.no_grad():
            out = model.generate(
                torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=24,
                do_sample=False,
                pad_token_id=2,
            )
        theirs = out[0, len(ids) :].tolist()
        assert ours == theirs, prompt
        assert gen.finish is (Finish.STOP if theirs[-1] == 2 else Finish.LENGTH)


def test_a_seeded_sampled_generation_repeats(folder):
    ids = folder.tokenizer.encode(PROMPTS[2])
    runs = [[p.token_id for p in Generation(folder, ids, Sampling(16, 0.9, 50, 0.95, seed))] for seed in (5, 5, 6)]
    assert runs[0] == runs[1] != runs[2]


@pytest.mark.parametrize(
    ("text", "split"),
    [("café crème brûlée", False), ("中文 и русский 🙂🙂", True), ("naïve — “quoted” ✓ 😀 done", True)],
)
def test_smollm2s_byte_level_tokens_stream_whole_characters(folder, text, split):
    tokenizer = folder.tokenizer
    ids = tokenizer.encode(text)
    stream = tokenizer.stream()
    pieces = [stream.push(i) for i in ids]
    assert "".join(pieces) + stream.flush() == text == tokenizer.decode(ids)
    assert not any("\ufffd" in p for p in pieces)
    assert ("" in pieces) is split  # a character that spans tokens gives nothing until its last


def test_smollm2s_chat_template_renders_its_default_system_turn(folder):
    prompt = folder.tokenizer.chat_prompt([{"role": "user", "content": "Hi!"}])
    assert prompt.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert prompt.endswith("<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n")
    ids = folder.tokenizer.encode(prompt, add_special_tokens=False)
    assert ids[0] == folder.tokenizer.tokenizer.token_to_id("<|im_start|>")
    assert folder.tokenizer.eos_token_ids == (2,)


def test_a_folder_missing_a_file_or_with_a_bad_one_names_it(tiny_decoder, tmp_path):
    copy = shutil.copytree(tiny_decoder, tmp_path / "copy")
    (copy / "generation.json").unlink()
    (copy / "tokenizer.json").unlink()
    with pytest.raises(ModelFileError, match=r"copy: a decoder folder needs tokenizer.json, generation.json, which"):
        DecoderFolder.open(copy)
    shutil.copy(tiny_decoder / "tokenizer.json", copy)
    (copy / "generation.json").write_text('{"eos_token_ids": "2"}')
    with pytest.raises(ModelFileError, match=r"generation.json: eos_token_ids: expected a list of token ids below"):
        DecoderFolder.open(copy)
    with pytest.raises(ModelFileError, match=r"nothing: not a decoder folder \(no such directory\)"):
        DecoderFolder.open(tmp_path / "nothing")
