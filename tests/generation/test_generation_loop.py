"""generation/loop.py on script decoders, whose greedy tokens a test writes: every way a generation ends, the text
it gives (stop strings held back and dropped, characters whole) and the cache freed however it ends."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from fixtures.script_decoder import script_table, train_byte_tokenizer, write_script_decoder, write_tokenizer_folder
from onnxport.generation.decoder_session import DecoderSession
from onnxport.generation.loop import Finish, Generation, Piece
from onnxport.generation.sampling import Sampling
from onnxport.generation.text_tokenizer import TextTokenizer
from onnxport.runtime import RunError

EOS = 0  # <|endoftext|>
TEXT = "Hello world.\n\nUser: more 🙂 words"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return TextTokenizer.from_folder(write_tokenizer_folder(tmp_path_factory.mktemp("bytes"), train_byte_tokenizer()))


@pytest.fixture(scope="module")
def scripted(tmp_path_factory, tokenizer):
    """A decoder that continues the prompt "Hi" with TEXT then the end-of-sequence token (and its prompt ids)."""
    prompt = tokenizer.encode("Hi")
    script = [*tokenizer.encode(TEXT), EOS]
    start = len(prompt) - 1
    table = script_table(start + len(script), tokenizer.vocab_size, {start + k: t for k, t in enumerate(script)})
    path = write_script_decoder(tmp_path_factory.mktemp("script") / "model.onnx", table)
    return DecoderSession.open(path, threads=1), prompt, script


def generation(scripted, tokenizer, **sampling) -> Generation:
    decoder, prompt, _ = scripted
    return Generation((decoder, tokenizer), prompt, Sampling(**sampling))


def test_a_greedy_run_gives_the_scripted_text_and_stops_at_the_end_of_sequence(scripted, tokenizer):
    gen = generation(scripted, tokenizer, max_new_tokens=100)
    pieces = list(gen)
    assert [p.token_id for p in pieces] == scripted[2] == gen.token_ids
    assert "".join(p.text for p in pieces) == TEXT == gen.text
    assert pieces[-1] == Piece(EOS, "")
    assert gen.finish is Finish.STOP and gen.finish == "stop"
    assert not any("\ufffd" in p.text for p in pieces)
    emoji = [p.text for p in pieces if p.text.endswith("🙂") or p.text == ""]
    assert emoji.count("") >= 3  # its four bytes are four tokens: three give no text yet
    timing = gen.timing
    assert (timing.prompt_tokens, timing.generated_tokens) == (len(scripted[1]), len(scripted[2]))
    assert 0 < timing.prefill_seconds <= timing.first_token_seconds and timing.decode_seconds > 0
    assert timing.tokens_per_second > 0


def test_a_stop_string_and_what_follows_never_reach_the_caller(scripted, tokenizer):
    gen = generation(scripted, tokenizer, max_new_tokens=100, stop=("\n\nUser:", "never"))
    pieces = list(gen)
    assert gen.text == "Hello world." == "".join(p.text for p in pieces)
    assert gen.finish is Finish.STOP
    assert tokenizer.decode(gen.token_ids).endswith("User:")  # the tokens that made the stop string were generated


def test_max_new_tokens_ends_it_with_length_and_gives_the_held_text(scripted, tokenizer):
    ids = tokenizer.encode("Hello world.\n")
    gen = generation(scripted, tokenizer, max_new_tokens=len(ids), stop=("\n\nUser:",))
    pieces = list(gen)
    assert gen.finish is Finish.LENGTH and len(gen.token_ids) == len(ids)
    assert pieces[-1].text.endswith("\n")  # held as the start of the stop string, given at the end
    assert gen.text == "Hello world.\n"


def test_a_deadline_already_past_ends_it_before_the_prefill(scripted, tokenizer):
    decoder, prompt, _ = scripted
    gen = Generation((decoder, tokenizer), prompt, Sampling(), deadline=time.monotonic() - 1)
    assert list(gen) == [] and gen.finish is Finish.TIME and gen.token_ids == []
    assert gen.cache is None


def test_a_deadline_passed_mid_run_ends_it_after_the_step_under_way(scripted, tokenizer):
    decoder, prompt, _ = scripted
    gen = Generation((decoder, tokenizer), prompt, Sampling(max_new_tokens=100), deadline=time.monotonic() + 3600)
    iterator = iter(gen)
    next(iterator)
    gen.deadline = time.monotonic() - 1
    rest = list(iterator)
    assert len(rest) == 1 and gen.finish is Finish.TIME and len(gen.token_ids) == 2


def test_cancel_from_another_thread_ends_it_before_the_next_step_and_frees_the_cache(scripted, tokenizer):
    gen = generation(scripted, tokenizer, max_new_tokens=100)
    iterator = iter(gen)
    next(iterator)
    cache = gen.cache
    assert cache is not None and cache.length == len(scripted[1])
    canceller = threading.Thread(target=gen.cancel)
    canceller.start()
    canceller.join()
    assert list(iterator) == []
    assert gen.finish is Finish.CANCELLED and len(gen.token_ids) == 1
    assert cache.closed and gen.cache is None


def test_cancelled_before_it_starts_it_runs_nothing(scripted, tokenizer):
    gen = generation(scripted, tokenizer)
    gen.cancel()
    assert list(gen) == [] and gen.finish is Finish.CANCELLED


def test_an_exception_in_the_callers_loop_frees_the_cache_on_close(scripted, tokenizer):
    with pytest.raises(KeyError):
        with generation(scripted, tokenizer, max_new_tokens=100) as gen:
            for piece in gen:
                cache = gen.cache
                if len(gen.token_ids) == 3:
                    raise KeyError("the caller's own error")
    assert cache.closed and gen.finish is Finish.CANCELLED
    gen.close()  # idempotent
    assert gen.finish is Finish.CANCELLED


def test_a_step_that_fails_frees_the_cache_and_raises(tmp_path, tokenizer):
    prompt = tokenizer.encode("Hi")
    rows = len(prompt) + 2  # the prefill's row and two steps', then a position past the table
    table = script_table(rows, tokenizer.vocab_size, dict.fromkeys(range(rows), 40))
    decoder = DecoderSession.open(write_script_decoder(tmp_path / "model.onnx", table))
    gen = Generation((decoder, tokenizer), prompt, Sampling(max_new_tokens=10))
    caches = []
    with pytest.raises(RunError, match="onnxruntime failed to run it"):
        for _ in gen:
            caches.append(gen.cache)
    assert len(gen.token_ids) == 3 and gen.finish is None
    assert caches[0].closed and gen.cache is None


def test_closing_a_suspended_generation_frees_it_and_it_is_iterated_once(scripted, tokenizer):
    gen = generation(scripted, tokenizer, max_new_tokens=100)
    iterator = iter(gen)
    next(iterator)
    cache = gen.cache
    gen.close()
    assert cache.closed and gen.finish is Finish.CANCELLED
    assert list(iterator) == []
    with pytest.raises(RuntimeError, match="a Generation is iterated once"):
        iter(gen)


def test_the_prompt_length_is_known_before_it_runs_and_an_empty_prompt_is_refused(scripted, tokenizer):
    decoder, prompt, _ = scripted
    assert Generation((decoder, tokenizer), prompt, Sampling()).prompt_length == len(prompt)
    with pytest.raises(ValueError, match="prompt_ids: expected at least one token id, got none"):
        Generation((decoder, tokenizer), [], Sampling())
    with pytest.raises(ValueError, match="sampling top_p"):
        Generation((decoder, tokenizer), prompt, Sampling(top_p=2.0))


def test_a_seeded_sampled_run_repeats(scripted, tokenizer, tmp_path):
    rng = np.random.default_rng(3)
    prompt = tokenizer.encode("Hi")
    table = rng.normal(size=(len(prompt) + 20, tokenizer.vocab_size)).astype(np.float32)
    decoder = DecoderSession.open(write_script_decoder(tmp_path / "model.onnx", table))
    runs = [
        Generation((decoder, tokenizer), prompt, Sampling(max_new_tokens=20, temperature=1.0, seed=seed))
        for seed in (11, 11, 12)
    ]
    tokens = [[p.token_id for p in run] for run in runs]
    assert tokens[0] == tokens[1] != tokens[2]


def test_the_finish_is_known_when_the_last_piece_comes(scripted, tokenizer):
    gen = generation(scripted, tokenizer, max_new_tokens=4)
    finishes = [gen.finish for _ in gen]
    assert finishes == [None, None, None, Finish.LENGTH]
    assert gen.timing.decode_seconds > 0 and gen.timing.tokens_per_second > 0
