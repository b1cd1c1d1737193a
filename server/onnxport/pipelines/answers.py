"""The Python side of a pipeline's answer: the spec's steps applied to each row of one output tensor.

A row is the output's values for one input (its first axis). Steps run in order: mean_pool averages a row of
token vectors over the tokens its mask keeps (a transformer's last hidden state to a sentence embedding, as
sentence-transformers does); softmax, sigmoid and normalize (L2) map a row to a row; top_k, argmax and ctc
end the chain with an answer that is not a tensor: [{label, index, score}] best first, {label, index, score},
or the collapsed text. Without such a step the answer is the row itself, as a list (an embedding)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxport.pipelines.spec import AnswerStep, OutputSpec

ENDING = ("top_k", "argmax", "ctc")


def answers(spec: OutputSpec, output: np.ndarray, feeds: dict[str, np.ndarray] | None = None) -> list[Any]:
    """One answer per row of `output` (the graph output spec["output"]); feeds: the inputs it ran on (mean_pool
    reads its mask there)."""
    rows = np.asarray(output, dtype=np.float64)
    if rows.ndim < 2:  # a scalar, or one value per row (a regressor's [batch] output)
        rows = rows.reshape(-1, 1)
    pooled = next((s for s in spec["steps"] if s["op"] == "mean_pool"), None)
    masks = None
    if pooled is not None:
        if feeds is None or pooled.get("mask") not in feeds:
            raise ValueError(f"mean_pool needs the input {pooled.get('mask')!r} the model ran on")
        masks = np.asarray(feeds[pooled["mask"]], dtype=np.float64)
    return [_answer(spec["steps"], row, None if masks is None else masks[i]) for i, row in enumerate(rows)]


def _answer(steps: list[AnswerStep], row: np.ndarray, mask: np.ndarray | None = None) -> Any:
    for index, step in enumerate(steps):
        op = step["op"]
        if op in ENDING and index != len(steps) - 1:
            raise ValueError(f"answer step {index} ({op}) must be the last")
        if op == "mean_pool":  # [tokens, hidden] -> [hidden], the mean over the tokens the mask keeps
            weights = np.asarray(mask, np.float64).reshape(-1, 1)
            row = (row * weights).sum(axis=0) / max(float(weights.sum()), 1e-9)
        elif op == "softmax":
            row = _softmax(row, axis=-1)
        elif op == "sigmoid":
            row = 1.0 / (1.0 + np.exp(-row))
        elif op == "normalize":
            norm = np.linalg.norm(row, axis=-1, keepdims=True)
            row = row / np.maximum(norm, 1e-12)
        elif op == "top_k":
            flat = row.reshape(-1)
            order = np.argsort(-flat, kind="stable")[: step.get("k", 5)]
            return [{"label": _label(step, int(i)), "index": int(i), "score": float(flat[i])} for i in order]
        elif op == "argmax":
            flat = row.reshape(-1)
            best = int(np.argmax(flat))
            return {"label": _label(step, best), "index": best, "score": float(flat[best])}
        elif op == "ctc":
            return _ctc(row, step["vocabulary"], step.get("blank", 0))
    return row.astype(np.float32).tolist()


def _softmax(values: np.ndarray, axis: int) -> np.ndarray:
    shifted = np.exp(values - values.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _label(step: AnswerStep, index: int) -> str:
    labels = step.get("labels")
    return labels[index] if labels and index < len(labels) else str(index)


def _ctc(steps: np.ndarray, vocabulary: list[str], blank: int) -> str:
    """Greedy CTC: the best symbol of each step, repeats merged, blanks dropped. steps: [time, symbols]."""
    best = np.argmax(steps.reshape(steps.shape[0], -1), axis=-1) if steps.ndim > 1 else steps.astype(int)
    text, previous = [], None
    for symbol in best.tolist():
        if symbol != previous and symbol != blank and symbol < len(vocabulary):
            text.append(vocabulary[symbol])
        previous = symbol
    return "".join(text)
