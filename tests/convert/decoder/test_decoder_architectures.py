"""The KV-cache export beyond Llama: tiny seeded models of other decoder families, checked step by step."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers

from onnxport.convert.decoder.export import export_decoder
from onnxport.convert.decoder.steps import check_steps

LAYOUT = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 512,
    "initializer_range": 0.3,
    "attn_implementation": "eager",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}
# name: (config class, model class, what differs from LAYOUT). Gemma 2's window of 8 is shorter than the
# 11-token prompt: its sliding-window layers are checked past it.
FAMILIES = {
    "llama-untied-head": ("LlamaConfig", "LlamaForCausalLM", {"tie_word_embeddings": False}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {"tie_word_embeddings": True}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 16, "sliding_window": 8}),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_exports_and_matches_torch_step_by_step(family: str, tmp_path: Path):
    config_class, model_class, extra = FAMILIES[family]
    config = getattr(transformers, config_class)(**{**LAYOUT, **extra})
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    path = tmp_path / "model.onnx"
    export_decoder(model, path)
    result = check_steps(model, path, list(range(3, 14)), 5, tolerance=1e-4)
    assert result.max_abs_diff <= 1e-4
    assert all(figure.argmax_agrees for figure in result.steps)
