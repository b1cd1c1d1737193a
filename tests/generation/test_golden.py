"""Where a generated text leaves fp32's golden continuation: by step, a near-tie of fp32's no divergence."""

from __future__ import annotations

from onnxport.generation.golden import GoldenPrompt, divergence, step_token

CLEAR, TIE = [20.0, 15.0], [20.0, 19.95]


def reference(best_two=(CLEAR, CLEAR, CLEAR)) -> GoldenPrompt:
    return {
        "prompt": "What is the capital of France?",
        "prompt_ids": [1, 2, 3],
        "tokens": [10, 11, 12],
        "texts": [" The", " The capital", " The capital is"],
        "best_two": [list(pair) for pair in best_two],
    }


def test_the_same_text_does_not_diverge():
    assert divergence(reference(), " The capital is") is None


def test_the_first_step_whose_text_is_not_a_start_is_where_it_left():
    assert divergence(reference(), " The city") == 1
    assert divergence(reference(), " A capital is") == 0


def test_a_text_that_stops_early_or_goes_on_leaves_where_the_shorter_ends():
    assert divergence(reference(), " The capital") == 2
    assert divergence(reference(), " The capital is Paris") == 3


def test_at_a_near_tie_of_fp32_the_comparison_ends_as_equal():
    assert divergence(reference((CLEAR, TIE, CLEAR)), " The city is Paris") is None
    assert divergence(reference((CLEAR, CLEAR, TIE)), " The city") == 1  # the tie comes after: too late


def test_step_token_is_the_text_a_step_added():
    assert [step_token(reference(), i) for i in range(4)] == [" The", " capital", " is", ""]
