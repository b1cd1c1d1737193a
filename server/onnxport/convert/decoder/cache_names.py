"""The names of a decoder file's inputs and outputs: the KV-cache convention Optimum and Transformers.js use.

Inputs `input_ids`, `attention_mask`, `position_ids` and per layer `past_key_values.{i}.key` / `.value`;
outputs `logits` and per layer `present.{i}.key` / `.value`. Each past and present tensor is
[batch, num_key_value_heads, length, head_dim]; the first step feeds past tensors of length 0.
"""

from __future__ import annotations

INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
POSITION_IDS = "position_ids"
LOGITS = "logits"

# The symbolic axes of the exported file.
BATCH = "batch"
SEQUENCE = "sequence"
PAST_SEQUENCE = "past_sequence"
TOTAL_SEQUENCE = "past_sequence + sequence"


def past_names(layers: int) -> list[str]:
    """`past_key_values.{i}.key`, `past_key_values.{i}.value` for each layer, in that order."""
    return [f"past_key_values.{i}.{part}" for i in range(layers) for part in ("key", "value")]


def present_names(layers: int) -> list[str]:
    """`present.{i}.key`, `present.{i}.value` for each layer, in that order."""
    return [f"present.{i}.{part}" for i in range(layers) for part in ("key", "value")]


def input_names(layers: int) -> list[str]:
    return [INPUT_IDS, ATTENTION_MASK, POSITION_IDS, *past_names(layers)]


def output_names(layers: int) -> list[str]:
    return [LOGITS, *present_names(layers)]


def dynamic_axes(layers: int) -> dict[str, dict[int, str]]:
    """torch.onnx.export's dynamic_axes for the convention: batch, sequence, past and total length."""
    axes: dict[str, dict[int, str]] = {
        INPUT_IDS: {0: BATCH, 1: SEQUENCE},
        ATTENTION_MASK: {0: BATCH, 1: TOTAL_SEQUENCE},
        POSITION_IDS: {0: BATCH, 1: SEQUENCE},
        LOGITS: {0: BATCH, 1: SEQUENCE},
    }
    for name in past_names(layers):
        axes[name] = {0: BATCH, 2: PAST_SEQUENCE}
    for name in present_names(layers):
        axes[name] = {0: BATCH, 2: TOTAL_SEQUENCE}
    return axes
