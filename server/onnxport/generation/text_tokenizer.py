"""A decoder's tokenizer, from its folder: tokenizer.json (the `tokenizers` library's), the chat template where
there is one (chat_template.jinja), and the end-of-sequence ids (generation.json's eos_token_ids)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tokenizers import Tokenizer

from onnxport.errors import ModelFileError
from onnxport.generation.chat_template import ChatError, ChatTemplate, Message
from onnxport.generation.token_stream import TokenStream

TOKENIZER = "tokenizer.json"
CHAT_TEMPLATE = "chat_template.jinja"
GENERATION = "generation.json"


@dataclass(frozen=True)
class TextTokenizer:
    tokenizer: Tokenizer
    eos_token_ids: tuple[int, ...] = ()
    bos_token_id: int | None = None
    template: ChatTemplate | None = None
    label: str = "model"  # the folder's name, in messages

    @classmethod
    def from_folder(cls, folder: Path | str) -> TextTokenizer:
        """The folder's tokenizer.json, with chat_template.jinja and generation.json where they are there; a
        ModelFileError naming the file that cannot be read."""
        folder = Path(folder)
        path = folder / TOKENIZER
        if not path.is_file():
            raise ModelFileError(f"{folder}: no {TOKENIZER} (the tokenizers library's JSON) in the folder")
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # the library raises a bare Exception on a bad file
            raise ModelFileError(f"{path}: the tokenizers library cannot read it: {exc}") from exc
        generation = folder / GENERATION
        eos, bos = read_generation(generation, tokenizer.get_vocab_size()) if generation.exists() else ((), None)
        special = {"bos_token": _text(tokenizer, bos), "eos_token": _text(tokenizer, eos[0] if eos else None)}
        source = folder / CHAT_TEMPLATE
        template = None
        if source.is_file():
            template = ChatTemplate(source.read_text(encoding="utf-8"), label=str(source), special=special)
        return cls(tokenizer, eos, bos, template, folder.name)

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """The token ids of text. A chat prompt already holds its special tokens: pass add_special_tokens=False."""
        return list(self.tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ids, special tokens left out."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def stream(self) -> TokenStream:
        """A decoder of one generation's tokens, one at a time, that gives text only once it is whole."""
        return TokenStream(self)

    def chat_prompt(self, messages: Sequence[Message]) -> str:
        """The prompt text of a chat, rendered by the model's template; ChatError without one or on a bad message."""
        if self.template is None:
            raise ChatError(f"{self.label} has no chat template ({CHAT_TEMPLATE}): send a plain prompt instead")
        return self.template.render(messages)


def read_generation(path: Path, vocab_size: int) -> tuple[tuple[int, ...], int | None]:
    """generation.json's end-of-sequence ids and beginning-of-sequence id, each checked against the vocabulary."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"{path}: not readable JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ModelFileError(f"{path}: expected a JSON object with eos_token_ids, got {type(data).__name__}")
    eos = data.get("eos_token_ids")
    if not isinstance(eos, list) or not all(_is_id(i, vocab_size) for i in eos):
        raise ModelFileError(f"{path}: eos_token_ids: expected a list of token ids below {vocab_size}, got {eos!r}")
    bos = data.get("bos_token_id")
    if bos is not None and not _is_id(bos, vocab_size):
        raise ModelFileError(f"{path}: bos_token_id: expected null or a token id below {vocab_size}, got {bos!r}")
    return tuple(eos), bos


def _is_id(value: object, vocab_size: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < vocab_size


def _text(tokenizer: Tokenizer, token_id: int | None) -> str:
    return "" if token_id is None else (tokenizer.id_to_token(token_id) or "")
