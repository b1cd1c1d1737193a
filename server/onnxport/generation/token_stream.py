"""Text from tokens as they come: a token's text is given once it is whole.

A byte-level BPE tokenizer splits a character of several UTF-8 bytes across tokens, and a sentencepiece-style
decoder drops the space before a sequence's first word: decoding token by token alone gives broken characters
and missing spaces. So the stream decodes a window: the tokens already given (for context) and the new ones,
gives the text past the context once it does not end in a replacement character (an incomplete UTF-8 sequence
decodes to U+FFFD), and moves the window on.
"""

from __future__ import annotations

from typing import Protocol, Sequence

INCOMPLETE = "\ufffd"


class Decodes(Protocol):
    def decode(self, ids: Sequence[int]) -> str: ...


class TokenStream:
    def __init__(self, tokenizer: Decodes):
        self._tokenizer = tokenizer
        self._ids: list[int] = []
        self._context = 0  # where the window starts: the tokens before `_given` that were given last
        self._given = 0  # how many tokens' text has been given

    def push(self, token_id: int) -> str:
        """The new text this token completes: "" while a character is still incomplete."""
        self._ids.append(token_id)
        return self._take(whole_only=True)

    def flush(self) -> str:
        """What is left, whole or not: the end of a generation."""
        return self._take(whole_only=False)

    @property
    def holding(self) -> bool:
        """Whether tokens were pushed whose text has not been given yet."""
        return self._given < len(self._ids)

    def _take(self, *, whole_only: bool) -> str:
        if not self.holding:
            return ""
        context = self._tokenizer.decode(self._ids[self._context : self._given])
        text = self._tokenizer.decode(self._ids[self._context :])
        if whole_only and (len(text) <= len(context) or text.endswith(INCOMPLETE)):
            return ""
        self._context, self._given = self._given, len(self._ids)
        return text[len(context) :]
