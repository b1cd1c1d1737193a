"""A candidate decoder judged against the fp32 reference by what it generates.

On a fixed prompt set: the share of prompts whose greedy continuation equals the reference's, and where the
others first diverge (a near-tie of the reference is no divergence: generation/near_tie.py). On a held-out
text: how often the candidate's next-token argmax is the reference's, and the mean negative log-likelihood
per token of each, with its change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, TypedDict

import numpy as np

from onnxport.generation.decoder_session import DecoderSession
from onnxport.generation.near_tie import is_near_tie
from onnxport.generation.text_tokenizer import TextTokenizer

# The held-out text is scored this many tokens a step, through the cache: the logits of a whole text at once
# would be tokens x vocabulary floats (50 MB for 256 tokens of a 49,152-token vocabulary).
SCORE_CHUNK = 64


class GenerationMetrics(TypedDict):
    prompts: int
    new_tokens: int
    greedy_equal_share: float
    mean_first_divergence: float | None  # over the prompts that diverge; None when none does
    first_divergences: list[int | None]  # each prompt's, in order: None where it does not diverge
    text_tokens: int
    top1_agreement: float
    nll_reference: float
    nll_candidate: float
    nll_change: float  # candidate's minus reference's: > 0 is worse


@dataclass(frozen=True)
class Continuation:
    """A prompt's greedy continuation: its tokens (up to and with an end-of-sequence token) and, per step, the two
    best logits (all the near-tie rule reads, kept rather than the vocabulary's worth)."""

    prompt_ids: tuple[int, ...]
    tokens: tuple[int, ...]
    step_logits: np.ndarray  # float32 [len(tokens), 2]


def greedy_continuations(
    decoder: DecoderSession, tokenizer: TextTokenizer, prompts: Sequence[str], new_tokens: int
) -> list[Continuation]:
    return [greedy_continuation(decoder, tokenizer, tokenizer.encode(p), new_tokens) for p in prompts]


def greedy_continuation(
    decoder: DecoderSession, tokenizer: TextTokenizer, prompt_ids: Sequence[int], new_tokens: int
) -> Continuation:
    eos = set(tokenizer.eos_token_ids)
    cache = decoder.new_cache()
    tokens: list[int] = []
    best_two: list[np.ndarray] = []
    try:
        logits = decoder.step(prompt_ids, cache)
        while True:
            token = int(np.argmax(logits))
            tokens.append(token)
            best_two.append(np.sort(np.partition(logits, logits.size - 2)[-2:])[::-1])
            if token in eos or len(tokens) >= new_tokens:
                break
            logits = decoder.step([token], cache)
    finally:
        cache.close()
    return Continuation(tuple(prompt_ids), tuple(tokens), np.asarray(best_two, dtype=np.float32).reshape(-1, 2))


def first_divergence(
    reference_tokens: Sequence[int], reference_step_logits: Sequence[np.ndarray], candidate_tokens: Sequence[int]
) -> int | None:
    """The first position where the candidate's token differs from the reference's, or None when they agree.

    Where they first differ at a near-tie of the reference (its two best logits within near_tie.MARGIN), the
    comparison ends there as equal: what follows continues a different, equally likely text. A candidate that
    stopped earlier or went on later diverges where the shorter ends.
    """
    for position, (ours, theirs) in enumerate(zip(reference_tokens, candidate_tokens)):
        if ours != theirs:
            return None if is_near_tie(reference_step_logits[position]) else position
    if len(reference_tokens) != len(candidate_tokens):
        return min(len(reference_tokens), len(candidate_tokens))
    return None


def measure(
    reference: DecoderSession,
    candidate: DecoderSession,
    tokenizer: TextTokenizer,
    prompts: Sequence[str],
    text: str,
    new_tokens: int,
    *,
    references: Sequence[Continuation] | None = None,
) -> GenerationMetrics:
    """The candidate's generation metrics against the reference (both share the tokenizer). `references`, the
    reference's greedy continuations of the prompts when they are known already, spares generating them again
    and gives the prompts' ids (a chat prompt is fed as the server feeds it: golden.prompt_ids)."""
    if not prompts:
        raise ValueError("prompts: expected at least one prompt, got none")
    if references is None:
        references = greedy_continuations(reference, tokenizer, prompts, new_tokens)
    if len(references) != len(prompts):
        raise ValueError(f"references: expected one per prompt ({len(prompts)}), got {len(references)}")
    first_divergences: list[int | None] = []
    for expected in references:
        got = greedy_continuation(candidate, tokenizer, expected.prompt_ids, new_tokens)
        first_divergences.append(first_divergence(expected.tokens, list(expected.step_logits), got.tokens))
    divergences = [position for position in first_divergences if position is not None]
    ids = tokenizer.encode(text)
    if len(ids) < 2:
        raise ValueError(f"text: expected at least 2 tokens to score, got {len(ids)}")
    scored = len(ids) - 1  # every token but the last predicts the next
    agree, nll_ours, nll_theirs = 0, 0.0, 0.0
    ours_cache, theirs_cache = reference.new_cache(), candidate.new_cache()
    try:
        for start in range(0, scored, SCORE_CHUNK):
            chunk = ids[start : min(start + SCORE_CHUNK, scored)]
            targets = np.asarray(ids[start + 1 : start + 1 + len(chunk)])
            ours, theirs = reference.step_all(chunk, ours_cache), candidate.step_all(chunk, theirs_cache)
            agree += int((ours.argmax(axis=1) == theirs.argmax(axis=1)).sum())
            nll_ours += _nll(ours, targets)
            nll_theirs += _nll(theirs, targets)
    finally:
        ours_cache.close()
        theirs_cache.close()
    return GenerationMetrics(
        prompts=len(prompts),
        new_tokens=new_tokens,
        greedy_equal_share=(len(prompts) - len(divergences)) / len(prompts),
        mean_first_divergence=float(np.mean(divergences)) if divergences else None,
        first_divergences=first_divergences,
        text_tokens=len(ids),
        top1_agreement=agree / scored,
        nll_reference=nll_ours / scored,
        nll_candidate=nll_theirs / scored,
        nll_change=(nll_theirs - nll_ours) / scored,
    )


def _nll(logits: np.ndarray, targets: np.ndarray) -> float:
    """The summed negative log-likelihood of targets under these logits (float64 log-softmax)."""
    scores = logits.astype(np.float64)
    top = scores.max(axis=1, keepdims=True)
    log_z = top[:, 0] + np.log(np.exp(scores - top).sum(axis=1))
    return float((log_z - scores[np.arange(len(targets)), targets]).sum())
