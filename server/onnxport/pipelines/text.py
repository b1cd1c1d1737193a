"""The Python side of a text pipeline: Hugging Face `tokenizers` (the library transformers' fast tokenizers run
on) with the spec's truncation and padding, never the ones stored in tokenizer.json."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, Union

import numpy as np

from onnxport.pipelines.spec import TextSpec

Text = Union[str, tuple[str, str]]  # one text, or a pair when the spec says `pair`


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
        encodings = self.tokenizer.encode_batch(list(texts))
        dtype = np.dtype(self.spec["dtype"])
        names = self.spec["inputs"]
        feeds = {names["ids"]: np.array([e.ids for e in encodings], dtype)}
        if names["mask"]:
            feeds[names["mask"]] = np.array([e.attention_mask for e in encodings], dtype)
        if names["type_ids"]:
            feeds[names["type_ids"]] = np.array([e.type_ids for e in encodings], dtype)
        return feeds
