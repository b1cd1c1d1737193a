"""generation/decoder_session.py on script decoders: a step feeds the ids, the mask and the positions, and the
cache advances by the presents the file gives back."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.script_decoder import script_table, write_script_decoder
from onnxport.generation.decoder_session import DecoderSession
from onnxport.runtime import RunError

VOCAB = 12


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(46)
    return rng.normal(size=(10, VOCAB)).astype(np.float32)


@pytest.fixture(scope="module", params=["optimum", "ort"])
def decoder(request, tmp_path_factory, table):
    path = tmp_path_factory.mktemp("script") / "model.onnx"
    return DecoderSession.open(write_script_decoder(path, table, names=request.param, head_dim=3), threads=1)


def test_a_new_cache_is_empty_and_a_step_gives_the_last_positions_logits(decoder, table):
    cache = decoder.new_cache()
    assert cache.length == 0
    logits = decoder.step([5, 6, 7], cache)
    assert logits.dtype == np.float32 and logits.shape == (VOCAB,)
    np.testing.assert_array_equal(logits, table[2])
    assert cache.length == 3


def test_the_positions_follow_the_cache_and_the_presents_become_the_pasts(decoder, table):
    cache = decoder.new_cache()
    decoder.step([5, 6], cache)
    np.testing.assert_array_equal(decoder.step([9], cache), table[2])
    np.testing.assert_array_equal(decoder.step_all([1, 2, 3], cache), table[3:6])
    assert cache.length == 6
    for past in cache.past().values():
        assert past.shape == (1, 2, 6, 3)
        assert past[0, 1, :, 2].tolist() == [5, 6, 9, 1, 2, 3]


def test_closing_a_cache_drops_its_arrays_and_it_steps_no_more(decoder):
    cache = decoder.new_cache()
    decoder.step([1, 2, 3, 4], cache)
    assert cache.nbytes() == 4 * 2 * 4 * 3 * 4  # 4 pasts x 2 heads x 4 positions x head dim 3 x 4 bytes
    cache.close()
    cache.close()
    assert cache.closed and cache.nbytes() == 0
    with pytest.raises(RuntimeError, match="this key/value cache is closed"):
        decoder.step([1], cache)


def test_a_step_without_ids_or_past_the_file_is_refused(decoder):
    with pytest.raises(ValueError, match="a decoder step needs at least one token id, got none"):
        decoder.step([], decoder.new_cache())
    cache = decoder.new_cache()
    with pytest.raises(RunError, match=r"^model.onnx: onnxruntime failed to run it: "):
        decoder.step(list(range(11)), cache)  # 11 positions, 10 rows
    assert cache.length == 0


def test_a_file_without_position_ids_gets_none(tmp_path, table):
    path = write_script_decoder(tmp_path / "model.onnx", table, position_ids=False)
    decoder = DecoderSession.open(path)
    assert not decoder.signature.has_position_ids
    cache = decoder.new_cache()
    decoder.step([3, 3], cache)
    np.testing.assert_array_equal(decoder.step([4], cache), table[2])
    assert decoder.vocab_size == VOCAB


def test_the_script_tables_best_tokens_are_what_a_test_writes(tmp_path):
    table = script_table(4, VOCAB, {0: 7, 1: 2, 3: 11})
    assert table.argmax(axis=1).tolist() == [7, 2, 0, 11]
