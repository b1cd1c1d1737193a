"""generation/agreement.py: a candidate decoder judged against the reference by its greedy continuations (a
near-tie of the reference is no divergence) and by its next tokens and likelihood over a text."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from onnxport.generation.agreement import first_divergence, greedy_continuations, measure
from onnxport.generation.decoder_folder import DecoderFolder
from onnxport.generation.decoder_session import DecoderSession

PROMPTS = [
    "The capital of France is",
    "Once upon a time",
    "def main():",
    "My favourite colour is",
    "The quick brown fox",
    "In 1969, the first",
    "Water boils at",
    "Dear Sir or Madam,",
]
TEXT = (
    "The sun rose over the hills, and the village woke slowly. Bakers lit their ovens, children ran to school, "
    "and the old clock in the square struck seven. Nobody noticed the stranger at the station."
)
CLEAR = np.array([5.0, 1.0])  # the reference's two best logits, far apart
TIE = np.array([5.0, 4.95])  # within near_tie.MARGIN


def test_equal_continuations_do_not_diverge():
    assert first_divergence([1, 2, 3], [CLEAR] * 3, [1, 2, 3]) is None


def test_the_first_differing_token_is_the_divergence():
    assert first_divergence([1, 2, 3, 4], [CLEAR] * 4, [1, 2, 9, 4]) == 2
    assert first_divergence([1, 2, 3, 4], [CLEAR] * 4, [7, 2, 3, 4]) == 0


def test_a_difference_at_a_near_tie_ends_the_comparison_as_equal():
    assert first_divergence([1, 2, 3, 4], [CLEAR, TIE, CLEAR, CLEAR], [1, 8, 9, 9]) is None
    # A near-tie where both agree changes nothing: the later difference is a divergence.
    assert first_divergence([1, 2, 3, 4], [CLEAR, TIE, CLEAR, CLEAR], [1, 2, 9, 9]) == 2


def test_a_continuation_that_stops_early_diverges_where_it_ends():
    assert first_divergence([1, 2, 3], [CLEAR] * 3, [1, 2]) == 2


@pytest.fixture(scope="module")
def folder(tiny_decoder):
    return DecoderFolder.open(tiny_decoder, threads=1)


@pytest.fixture(scope="module")
def perturbed(tiny_decoder, tmp_path_factory):
    """The tiny decoder with the weights of its layers' MatMuls scaled by a factor (the embedding and head kept)."""

    def scaled(factor: float) -> DecoderSession:
        model = onnx.load(str(tiny_decoder / "model.onnx"))
        for tensor in model.graph.initializer:
            weights = numpy_helper.to_array(tensor)
            if weights.ndim == 2 and 49152 not in weights.shape:
                tensor.CopyFrom(numpy_helper.from_array((weights * factor).astype(np.float32), tensor.name))
        path = tmp_path_factory.mktemp("perturbed") / "model.onnx"
        onnx.save(model, str(path))
        return DecoderSession.open(path, threads=1)

    return scaled


def test_greedy_continuations_keep_the_two_best_logits_of_each_step(folder):
    (continuation,) = greedy_continuations(folder.decoder, folder.tokenizer, PROMPTS[:1], 5)
    assert len(continuation.tokens) == 5 and continuation.step_logits.shape == (5, 2)
    assert (continuation.step_logits[:, 0] >= continuation.step_logits[:, 1]).all()
    assert continuation.prompt_ids == tuple(folder.tokenizer.encode(PROMPTS[0]))


def test_the_reference_against_itself_agrees_entirely(folder):
    metrics = measure(folder.decoder, folder.decoder, folder.tokenizer, PROMPTS, TEXT, 16)
    assert metrics["greedy_equal_share"] == 1.0 and metrics["mean_first_divergence"] is None
    assert metrics["first_divergences"] == [None] * 8
    assert metrics["top1_agreement"] == 1.0 and metrics["nll_change"] == 0.0
    assert (metrics["prompts"], metrics["new_tokens"]) == (8, 16) and metrics["text_tokens"] > 30
    assert metrics["nll_reference"] == metrics["nll_candidate"] > 0


def test_a_perturbed_copy_agrees_less_and_a_more_perturbed_one_less_still(folder, perturbed):
    mild, strong = (measure(folder.decoder, perturbed(f), folder.tokenizer, PROMPTS, TEXT, 16) for f in (1.05, 1.3))
    for metrics in (mild, strong):
        assert metrics["greedy_equal_share"] < 1.0
        assert metrics["mean_first_divergence"] is not None and 0 <= metrics["mean_first_divergence"] < 16
        found = [d for d in metrics["first_divergences"] if d is not None]
        assert len(found) == round((1 - metrics["greedy_equal_share"]) * 8)
        assert sum(found) / len(found) == pytest.approx(metrics["mean_first_divergence"])
        assert metrics["top1_agreement"] < 1.0
        assert metrics["nll_change"] != 0.0
        assert metrics["nll_change"] == pytest.approx(metrics["nll_candidate"] - metrics["nll_reference"])
    assert strong["greedy_equal_share"] < mild["greedy_equal_share"]
    assert strong["top1_agreement"] < mild["top1_agreement"]
