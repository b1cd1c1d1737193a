"""A decoder's golden continuations: what fp32 generates greedily for each of the recipe's prompts, kept beside
the model (golden.json) so that a runtime elsewhere can be held to it token by token.

Per prompt: the prompt as the recipe gives it, its token ids as the server feeds them, fp32's tokens (up to and
with an end-of-sequence token), the text through each step as a server streams it, and each step's two best
logits, all the near-tie rule (near_tie.py) reads. `divergence` finds where a generated text leaves it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from typing_extensions import TypedDict

from onnxport.generation.agreement import Continuation
from onnxport.generation.near_tie import MARGIN, is_near_tie
from onnxport.generation.text_tokenizer import TextTokenizer

GOLDEN_FILE = "golden.json"
GOLDEN_FORMAT = 1


class GoldenPrompt(TypedDict):
    prompt: str  # as the recipe gives it (a chat prompt's user message)
    prompt_ids: list[int]  # as the server feeds it: a chat prompt through the model's template
    tokens: list[int]
    texts: list[str]  # the generated text through each step, as the server streams it
    best_two: list[list[float]]  # each step's two best logits, best first


class Golden(TypedDict):
    format: int
    chat: bool
    new_tokens: int
    near_tie_margin: float
    prompts: list[GoldenPrompt]


def prompt_ids(tokenizer: TextTokenizer, prompt: str, *, chat: bool) -> list[int]:
    """A prompt's ids as the server feeds them: a chat prompt through the template, which wrote its special tokens."""
    if chat:
        return tokenizer.encode(tokenizer.chat_prompt([{"role": "user", "content": prompt}]), add_special_tokens=False)
    return tokenizer.encode(prompt)


def golden(
    tokenizer: TextTokenizer,
    prompts: Sequence[str],
    continuations: Sequence[Continuation],
    *,
    chat: bool,
    new_tokens: int,
) -> Golden:
    return {
        "format": GOLDEN_FORMAT,
        "chat": chat,
        "new_tokens": new_tokens,
        "near_tie_margin": MARGIN,
        "prompts": [
            {
                "prompt": prompt,
                "prompt_ids": list(continuation.prompt_ids),
                "tokens": list(continuation.tokens),
                "texts": step_texts(tokenizer, continuation.tokens),
                "best_two": [[float(a), float(b)] for a, b in continuation.step_logits.tolist()],
            }
            for prompt, continuation in zip(prompts, continuations, strict=True)
        ],
    }


def step_texts(tokenizer: TextTokenizer, tokens: Sequence[int]) -> list[str]:
    """The text through each step as generation/loop.py streams it: an end-of-sequence token adds none, and
    the last step gives what the stream still held."""
    eos, stream = set(tokenizer.eos_token_ids), tokenizer.stream()
    texts, text = [], ""
    for position, token in enumerate(tokens):
        text += "" if token in eos else stream.push(token)
        if position == len(tokens) - 1:
            text += stream.flush()
        texts.append(text)
    return texts


def divergence(reference: GoldenPrompt, text: str) -> int | None:
    """The step where `text` (a whole generated text) leaves the reference's, or None when it does not.

    The first step whose text is not a start of `text` is where it left; a text that goes on past the reference's
    end left after its last step. A step where the reference's two best logits were a near-tie is no divergence:
    the comparison ends there, as equal (agreement.first_divergence, by tokens)."""
    texts = reference["texts"]
    for position, through in enumerate(texts):
        if not text.startswith(through):
            return None if is_near_tie(np.asarray(reference["best_two"][position])) else position
    return None if text == (texts[-1] if texts else "") else len(texts)  # every step a start of it: longer, or equal


def step_token(reference: GoldenPrompt, position: int) -> str:
    """The text the reference's step `position` added ("" past its end)."""
    texts = reference["texts"]
    if position >= len(texts):
        return ""
    return texts[position][len(texts[position - 1]) if position else 0 :]
