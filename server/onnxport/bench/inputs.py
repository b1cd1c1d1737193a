"""The batch-1 inputs every path is measured with (the same arrays everywhere)."""

from __future__ import annotations

import numpy as np

MINILM_SEQUENCE = 128


def batch_one(entry: dict, golden: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The first golden row; minilm gets a full 128-token sequence, the length speed targets use."""
    if entry["name"] == "minilm":
        rng = np.random.default_rng(0)
        ids = rng.integers(1000, 20000, (1, MINILM_SEQUENCE)).astype(np.int64)
        ids[0, 0], ids[0, -1] = 101, 102  # [CLS] ... [SEP]
        return {"input_ids": ids, "attention_mask": np.ones((1, MINILM_SEQUENCE), np.int64)}
    return {name: np.ascontiguousarray(value[:1]) for name, value in golden.items()}
