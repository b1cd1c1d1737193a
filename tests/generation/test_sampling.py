"""generation/sampling.py: greedy, temperature, top-k and top-p on handmade logits; a seed repeats a run."""

from __future__ import annotations

import numpy as np
import pytest

from onnxport.generation.sampling import Sampling, SamplingError, next_token, top_k_mask, top_p_mask

LOGITS = np.log(np.array([0.05, 0.4, 0.1, 0.3, 0.15], dtype=np.float64)).astype(np.float32)


def draws(sampling: Sampling, logits: np.ndarray = LOGITS, count: int = 2000) -> list[int]:
    rng = sampling.rng()
    return [next_token(logits, sampling, rng) for _ in range(count)]


def test_greedy_takes_the_first_best_logit_and_ignores_the_rest():
    assert next_token(LOGITS, Sampling(), np.random.default_rng(0)) == 1
    tied = np.array([0.0, 3.0, 3.0, -1.0], dtype=np.float32)
    assert next_token(tied, Sampling(top_k=1, top_p=0.1, seed=3), np.random.default_rng(0)) == 1


def test_a_seed_repeats_a_sampled_run_and_another_seed_does_not():
    sampling = Sampling(temperature=1.0, seed=46)
    first, second = draws(sampling, count=200), draws(sampling, count=200)
    assert first == second
    assert draws(Sampling(temperature=1.0, seed=47), count=200) != first


def test_temperature_one_draws_the_softmax():
    counts = np.bincount(draws(Sampling(temperature=1.0, seed=1), count=20000), minlength=5) / 20000
    np.testing.assert_allclose(counts, [0.05, 0.4, 0.1, 0.3, 0.15], atol=0.015)


def test_a_low_temperature_sharpens_and_a_high_one_flattens():
    cold = np.bincount(draws(Sampling(temperature=0.2, seed=2)), minlength=5) / 2000
    hot = np.bincount(draws(Sampling(temperature=5.0, seed=2)), minlength=5) / 2000
    assert cold[1] > 0.75
    assert hot.min() > 0.12


def test_top_k_keeps_the_k_best_and_breaks_a_tie_by_the_lower_id():
    assert top_k_mask(LOGITS.astype(np.float64), 2).tolist() == [False, True, False, True, False]
    tied = np.array([1.0, 2.0, 2.0, 2.0])
    assert top_k_mask(tied, 2).tolist() == [False, True, True, False]
    assert set(draws(Sampling(temperature=1.0, top_k=2, seed=4))) == {1, 3}


def test_top_p_keeps_the_fewest_best_whose_mass_reaches_p():
    scores = LOGITS.astype(np.float64)
    # Best first: 0.4 (id 1), 0.3 (id 3), 0.15 (id 4), 0.1, 0.05.
    assert top_p_mask(scores, 0.39).tolist() == [False, True, False, False, False]
    assert top_p_mask(scores, 0.41).tolist() == [False, True, False, True, False]
    assert top_p_mask(scores, 0.8).tolist() == [False, True, False, True, True]
    assert top_p_mask(scores, 0.01).tolist() == [False, True, False, False, False]  # the best always
    assert set(draws(Sampling(temperature=1.0, top_p=0.8, seed=5))) == {1, 3, 4}


def test_top_p_reads_the_mass_that_top_k_left():
    # After top-k 3 the best three are 0.4/0.85, 0.3/0.85, 0.15/0.85: 0.47 + 0.35 reach 0.8.
    assert set(draws(Sampling(temperature=1.0, top_k=3, top_p=0.8, seed=6))) == {1, 3}


def test_masked_and_infinite_logits_are_never_drawn():
    logits = np.array([-np.inf, 0.0, -np.inf, 0.0], dtype=np.float32)
    assert set(draws(Sampling(temperature=1.0, seed=7), logits)) == {1, 3}
    nothing = np.full(4, -np.inf, dtype=np.float32)
    assert next_token(nothing, Sampling(temperature=1.0, seed=7), np.random.default_rng(0)) == 0


def test_the_defaults_are_checked_and_greedy():
    assert Sampling().checked() == Sampling(max_new_tokens=64, temperature=0.0, top_k=0, top_p=1.0, seed=None)
    assert Sampling().greedy and not Sampling(temperature=0.7).greedy


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"max_new_tokens": 0}, "max_new_tokens", "sampling max_new_tokens: expected an integer >= 1, got 0"),
        ({"max_new_tokens": 2.0}, "max_new_tokens", "expected an integer >= 1, got 2.0"),
        ({"max_new_tokens": True}, "max_new_tokens", "got True"),
        ({"temperature": -0.1}, "temperature", "expected a finite number >= 0 (0 = greedy), got -0.1"),
        ({"temperature": float("nan")}, "temperature", "got nan"),
        ({"temperature": "0.7"}, "temperature", "got '0.7'"),
        ({"top_k": -1}, "top_k", "sampling top_k: expected an integer >= 0 (0 = off), got -1"),
        ({"top_p": 0.0}, "top_p", "sampling top_p: expected a number in (0, 1] (1 = off), got 0.0"),
        ({"top_p": 1.5}, "top_p", "got 1.5"),
        ({"seed": -3}, "seed", "sampling seed: expected null or an integer in [0, 2**64), got -3"),
        ({"stop": ["a"]}, "stop", "sampling stop: expected a tuple of non-empty strings, got ['a']"),
        ({"stop": ("",)}, "stop", "got ('',)"),
    ],
)
def test_a_setting_out_of_range_names_the_field_what_was_expected_and_what_came(changes, field, words):
    with pytest.raises(SamplingError, match=None) as caught:
        Sampling(**changes).checked()
    assert caught.value.field == field
    assert words in str(caught.value)
    assert isinstance(caught.value, ValueError)
