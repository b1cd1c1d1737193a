"""A decoder file checked against its source model step by step: the prompt's logits, then each cached step's.

Both sides run the same tokens: the prompt at once (the file with a past of length 0), then one token a step,
the greedy choice of the source model, the file fed back its own present tensors as the next past. Each
step's logits are compared (largest absolute difference, and whether the two argmaxes agree); a step over
the tolerance raises StepMismatch naming it. greedy_tokens runs the file alone in that loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import onnxruntime as ort

from onnxport import runtime
from onnxport.convert.decoder import cache_names

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# Float32 export against float32 torch: 1e-5 to 1e-4 on small models; the default leaves room for depth.
TOLERANCE = 1e-3


@dataclass(frozen=True)
class StepFigure:
    """One step: 0 is the prompt (its last position's logits and every other's), 1.. the cached steps."""

    step: int
    past: int  # tokens already in the cache
    max_abs_diff: float
    argmax_agrees: bool


@dataclass(frozen=True)
class StepCheck:
    steps: list[StepFigure]
    tokens: list[int]  # the tokens fed after the prompt (the source model's greedy choices)

    @property
    def max_abs_diff(self) -> float:
        return max(figure.max_abs_diff for figure in self.steps)


class StepMismatch(ValueError):
    """The file's logits left the source model's at one step."""

    def __init__(self, figure: StepFigure, tolerance: float, label: str) -> None:
        where = "the prompt" if figure.step == 0 else f"cached step {figure.step} (past {figure.past})"
        super().__init__(
            f"{label}: at {where} the logits differ from the source model's by {figure.max_abs_diff:.3g}, "
            f"expected at most {tolerance:g} (argmax {'agrees' if figure.argmax_agrees else 'differs'})"
        )
        self.figure = figure


class DecoderSession:
    """A decoder file in onnxruntime, its past carried from one call to the next (one sequence, batch 1)."""

    def __init__(self, model: Path, *, label: str = "decoder") -> None:
        self.label = label
        self.session = runtime.create_session(model, label=label)
        pasts = [i for i in self.session.get_inputs() if i.name.startswith("past_key_values.")]
        self.past_inputs: list[ort.NodeArg] = pasts
        self.layers = len(pasts) // 2
        self.reset()

    def reset(self) -> None:
        self.past: list[np.ndarray] = [
            np.zeros((1, int(i.shape[1]), 0, int(i.shape[3])), dtype=np.float32) for i in self.past_inputs
        ]
        self.length = 0

    def step(self, ids: Sequence[int]) -> np.ndarray:
        """The logits [len(ids), vocab] of `ids` after everything fed so far."""
        count = len(ids)
        feeds: runtime.Feeds = {
            cache_names.INPUT_IDS: np.asarray([ids], dtype=np.int64),
            cache_names.ATTENTION_MASK: np.ones((1, self.length + count), dtype=np.int64),
            cache_names.POSITION_IDS: np.arange(self.length, self.length + count, dtype=np.int64)[None, :],
        }
        feeds.update(zip(cache_names.past_names(self.layers), self.past))
        names = cache_names.output_names(self.layers)
        outputs = runtime.run_outputs(self.session, names, feeds, label=self.label)
        self.past = [outputs[name] for name in cache_names.present_names(self.layers)]
        self.length += count
        return outputs[cache_names.LOGITS][0]


def greedy_tokens(
    decoder: DecoderSession, prompt: Sequence[int], new_tokens: int, eos: Sequence[int] = ()
) -> list[int]:
    """The file's greedy continuation of `prompt`: up to `new_tokens` tokens, stopping after an eos token."""
    decoder.reset()
    logits = decoder.step(prompt)
    tokens: list[int] = []
    while len(tokens) < new_tokens:
        token = int(np.argmax(logits[-1]))
        tokens.append(token)
        if token in eos or len(tokens) == new_tokens:
            break
        logits = decoder.step([token])
    return tokens


def _figure(step: int, past: int, ours: np.ndarray, theirs: np.ndarray) -> StepFigure:
    return StepFigure(
        step=step,
        past=past,
        max_abs_diff=float(np.max(np.abs(ours - theirs))),
        argmax_agrees=bool(np.array_equal(ours.argmax(-1), theirs.argmax(-1))),
    )


def check_steps(
    source: PreTrainedModel,
    model: Path,
    prompt: Sequence[int],
    steps: int = 5,
    *,
    tolerance: float = TOLERANCE,
    label: str | None = None,
) -> StepCheck:
    """The file at `model` against `source` on `prompt` and `steps` cached steps; StepMismatch past tolerance."""
    import torch
    from transformers import DynamicCache

    if not prompt:
        raise ValueError("check_steps: expected a prompt of at least one token, got none")
    name = label or str(model)
    decoder = DecoderSession(model, label=name)
    cache = DynamicCache(config=source.config)  # as generate() makes it: sliding-window layers included
    figures: list[StepFigure] = []
    tokens: list[int] = []
    fed: list[int] = list(prompt)
    past = 0
    with torch.no_grad():
        for step in range(steps + 1):
            ids = torch.tensor([fed], dtype=torch.int64)
            positions = torch.arange(past, past + len(fed), dtype=torch.int64)[None, :]
            mask = torch.ones((1, past + len(fed)), dtype=torch.int64)
            out = source(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True)
            theirs = out.logits[0].float().numpy()
            ours = decoder.step(fed)
            figure = _figure(step, past, ours, theirs)
            figures.append(figure)
            if not figure.max_abs_diff <= tolerance:  # a NaN fails too
                raise StepMismatch(figure, tolerance, name)
            past += len(fed)
            if step < steps:
                fed = [int(theirs[-1].argmax())]
                tokens.append(fed[0])
    return StepCheck(steps=figures, tokens=tokens)
