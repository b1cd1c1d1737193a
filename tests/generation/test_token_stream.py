"""generation/token_stream.py: a generation's text token by token, each character given once it is whole.

On a byte-level BPE trained here (tests/fixtures/script_decoder.py), whose vocabulary never merged the bytes of
"é", "中" or "🙂": each of their bytes is a token of its own. SmolLM2's real tokenizer is tested with the tiny
decoder (tests/generation/test_tiny_decoder_generation.py).
"""

from __future__ import annotations

import pytest

from fixtures.script_decoder import train_byte_tokenizer, write_tokenizer_folder
from onnxport.generation.text_tokenizer import TextTokenizer

TEXTS = ["Hello world.", "café crème", "中文 text 🙂!", "a 🙂🙂 b", "Numbers 0123, words."]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return TextTokenizer.from_folder(write_tokenizer_folder(tmp_path_factory.mktemp("bytes"), train_byte_tokenizer()))


def streamed(tokenizer, ids):
    stream = tokenizer.stream()
    pieces = [stream.push(i) for i in ids]
    return pieces, stream.flush()


@pytest.mark.parametrize("text", TEXTS)
def test_the_pieces_join_into_the_decoded_text_with_no_broken_character(tokenizer, text):
    ids = tokenizer.encode(text)
    pieces, rest = streamed(tokenizer, ids)
    assert "".join(pieces) == text == tokenizer.decode(ids)
    assert rest == ""
    assert not any("\ufffd" in p for p in pieces)


def test_a_character_split_across_tokens_comes_with_its_last_byte(tokenizer):
    ids = tokenizer.encode("🙂")
    assert len(ids) == 4  # four UTF-8 bytes, four tokens
    pieces, _ = streamed(tokenizer, ids)
    assert pieces == ["", "", "", "🙂"]


def test_an_unfinished_character_is_held_and_the_flush_gives_what_is_left(tokenizer):
    ids = tokenizer.encode("ok 中")[:-1]  # the last byte of 中 missing
    pieces, rest = streamed(tokenizer, ids)
    assert "".join(pieces) == "ok "
    assert rest == "\ufffd"  # the end of a generation: what is left, whole or not


def test_special_tokens_give_no_text(tokenizer):
    end = tokenizer.tokenizer.token_to_id("<|im_end|>")
    pieces, _ = streamed(tokenizer, [*tokenizer.encode("hi"), end, *tokenizer.encode(" there")])
    assert "".join(pieces) == "hi there"
