"""The Python side of a text pipeline: Hugging Face `tokenizers` (the library transformers' fast tokenizers run
on) with the spec's truncation and padding, never the ones stored in tokenizer.json."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Callable, Sequence, Union

import numpy as np

from onnxport.pipelines.raw import Limits, OverLimit, RawInputError
from onnxport.pipelines.spec import SpecError, TextSpec

Text = Union[str, tuple[str, str]]  # one text, or a pair when the spec says `pair`

# A long text is cut before it is tokenized (a 10 MB text took 23 s in full, for 128 tokens): first to this many
# characters per token that truncation keeps, doubling while that holds too few whole words, up to the most.
# Past the most (texts of mostly spaces, or one endless word), the text is read that far and no further.
FIRST_CHARS_PER_TOKEN = 16
MOST_CHARS_PER_TOKEN = 1024


class TextPipeline:
    def __init__(self, spec: TextSpec, tokenizer_file: Path):
        from tokenizers import Tokenizer

        self.spec = spec
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        pad_token, pad_id = self._pad(self.tokenizer.padding)
        self.tokenizer.no_truncation()
        self.tokenizer.enable_truncation(spec["max_length"], direction=spec["truncation"], strategy="longest_first")
        self.tokenizer.no_padding()
        self.tokenizer.enable_padding(direction="right", pad_id=pad_id, pad_token=pad_token)
        # cut() counts a text's tokens without truncation: a tokenizer of its own, as a shared one's settings
        # are not to be switched back and forth under concurrent requests.
        self.counter = Tokenizer.from_file(str(tokenizer_file))
        self.counter.no_truncation()
        self.counter.no_padding()

    def _pad(self, stored: dict | None) -> tuple[str, int]:
        """The pad token: the one tokenizer.json's own padding names, else the first of the usual ones it knows."""
        if stored:
            return stored["pad_token"], stored["pad_id"]
        for token in ("[PAD]", "<pad>", "<|padding|>", "<|endoftext|>"):
            found = self.tokenizer.token_to_id(token)
            if found is not None:
                return token, found
        return "[PAD]", 0

    def encode(self, texts: Sequence[Text]) -> dict[str, np.ndarray]:
        """The model's feeds for a batch of texts (pairs when the spec says so), padded to the longest."""
        if not texts:
            raise ValueError("no texts to encode")
        pairs = [t for t in texts if isinstance(t, tuple)]
        if self.spec["pair"] and len(pairs) != len(texts):
            raise ValueError("this model takes pairs of texts: give each input as [first, second]")
        if not self.spec["pair"] and pairs:
            raise ValueError("this model takes single texts, not pairs")
        if self.spec["pair"]:
            texts = [self._cut_pair(t) for t in texts if isinstance(t, tuple)]
        else:
            texts = [self.cut(t) for t in texts if isinstance(t, str)]
        encodings = self.tokenizer.encode_batch(list(texts))
        dtype = np.dtype(self.spec["dtype"])
        names = self.spec["inputs"]
        feeds = {names["ids"]: np.array([e.ids for e in encodings], dtype)}
        if names["mask"]:
            feeds[names["mask"]] = np.array([e.attention_mask for e in encodings], dtype)
        if names["type_ids"]:
            feeds[names["type_ids"]] = np.array([e.type_ids for e in encodings], dtype)
        return feeds

    def cut(self, text: str) -> str:
        """`text`, or the part of it whose tokens truncation can keep: whole words up to at least max_length + 2
        tokens, from the start (from the end when truncation is left). Those words tokenize as they do in the
        whole text, so the model gets the same tokens; the word the cut may split is left out."""
        keep = self.spec["max_length"] + 2
        limit = FIRST_CHARS_PER_TOKEN * keep
        while len(text) > limit:
            cut = self._whole_words(text, limit, keep)
            if cut is not None:
                return cut
            if limit >= MOST_CHARS_PER_TOKEN * keep:
                return text[:limit] if self.spec["truncation"] == "right" else text[-limit:]
            limit *= 2
        return text

    def _whole_words(self, text: str, length: int, keep: int) -> str | None:
        """The shortest prefix (suffix) of text[:length] (text[-length:]) holding `keep` tokens of whole words,
        or None if it holds fewer."""
        right = self.spec["truncation"] == "right"
        part = text[:length] if right else text[-length:]
        encoding = self.counter.encode(part, add_special_tokens=False)
        words = encoding.word_ids
        if right:
            split_word = words[-1] if words else None  # the last word may go on past the cut
            whole = [i for i, w in enumerate(words) if w != split_word]
            if len(whole) < keep:
                return None
            return part[: encoding.offsets[whole[keep - 1]][1]]
        split_word = words[0] if words else None
        whole = [i for i, w in enumerate(words) if w != split_word]
        if len(whole) < keep:
            return None
        return part[encoding.offsets[whole[-keep]][0] :]

    def _cut_pair(self, pair: tuple[str, str]) -> tuple[str, str]:
        """The pair with its long text cut, when that keeps which of the two is longer: longest_first shares
        max_length by that alone once the longer one is past it. Otherwise (both long, or the other text as
        long as the cut one) the pair whole."""
        first, second = self.cut(pair[0]), self.cut(pair[1])
        if first is pair[0] and second is pair[1]:
            return pair
        if first is not pair[0] and second is not pair[1]:
            return pair
        cut, whole = (first, second) if first is not pair[0] else (second, first)
        if self._count(whole) < self._count(cut):
            return first, second
        return pair

    def _count(self, text: str) -> int:
        return len(self.counter.encode(text, add_special_tokens=False).ids)


def check_spec(spec: TextSpec, where: str, assets: list[str]) -> dict[str, str]:
    """A text spec against the model's assets (kinds.py); the graph inputs it names, by spec key."""
    named = {
        f"text.inputs.{key}": name for key in ("ids", "mask", "type_ids") if (name := spec["inputs"][key]) is not None
    }
    for key, label in (("tokenizer", spec["tokenizer"]), ("config", spec["config"])):
        if label is not None and label not in assets:
            raise SpecError(
                f"{where}: pipeline.text.{key} {label!r} is not one of the model's assets "
                f"({', '.join(assets) or 'none'})"
            )
    return named


def request_feeds(
    spec: TextSpec, value: np.ndarray, limits: Limits, asset: Callable[[str], Path]
) -> dict[str, np.ndarray]:
    """A V2 request's `text` (BYTES, [n] or [n, 2] for pairs) as the model's feeds (kinds.py)."""
    pair = spec["pair"]
    if not (value.ndim == 2 and value.shape[1] == 2 if pair else value.ndim == 1):
        want = "[n, 2] (pairs of texts)" if pair else "[n] (one text per row)"
        raise RawInputError(f"input 'text': shape {list(value.shape)}; this model takes {want}")
    limits.check_rows("text", value)
    size = sum(len(item) if isinstance(item, bytes) else len(str(item).encode()) for item in value.reshape(-1))
    if size > limits.text_bytes:
        raise OverLimit(
            f"input 'text': {size:,} bytes of text; this server takes at most {limits.text_bytes:,} "
            "per request (setting raw_max_text_bytes)"
        )
    try:
        rows: list[Text] = [(_utf8(row[0]), _utf8(row[1])) if pair else _utf8(row) for row in value.tolist()]
    except UnicodeDecodeError as exc:
        raise RawInputError(f"input 'text': not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return _pipeline(json.dumps(spec, sort_keys=True), asset(spec["tokenizer"])).encode(rows)


@functools.lru_cache(maxsize=16)
def _pipeline(spec_json: str, tokenizer_file: Path) -> TextPipeline:
    # A tokenizer takes tens of milliseconds to build; a tokenizer file is an immutable artifact.
    return TextPipeline(json.loads(spec_json), tokenizer_file)


def _utf8(item: Any) -> str:
    return item.decode("utf-8") if isinstance(item, bytes) else str(item)
