"""The generation budgets (settings generation_*): checked before any work, each refusal a 4xx naming the
limit and the value that came; and the slots that bound how many generations run at once."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from onnxport.serving.config import ServerSettings
from onnxport.serving.generate.failures import GenerateError

CHARS_PER_TOKEN = 64  # before_tokenizing: far more than any real text averages


@dataclass(frozen=True)
class Budgets:
    max_new_tokens: int
    max_context: int
    max_concurrent: int
    seconds: float  # per request; past it the generation ends with finish reason "time"

    @classmethod
    def of(cls, settings: ServerSettings) -> Budgets:
        return cls(
            settings["generation_max_new_tokens"],
            settings["generation_max_context"],
            settings["generation_max_concurrent"],
            settings["generation_time_limit"],
        )

    def before_tokenizing(self, characters: int, field: str) -> None:
        """A prompt far too long for max_context is refused before the tokenizer spends seconds and memory on
        it (the body may be max_request_bytes): no real text averages CHARS_PER_TOKEN characters a token."""
        most = self.max_context * CHARS_PER_TOKEN
        if characters > most:
            raise GenerateError(
                400,
                f"the prompt is {characters} characters, which cannot fit the server's generation_max_context "
                f"({self.max_context} tokens; refused untokenized past {most} characters)",
                param=field,
                code="context_length_exceeded",
            )

    def new_tokens(self, asked: int | None, prompt_tokens: int) -> int:
        """How many tokens to generate at most: what was asked if it fits, else a 400 naming the limit; when
        nothing was asked, as many as both limits leave."""
        room = self.max_context - prompt_tokens
        if room < 1:
            raise GenerateError(
                400,
                f"the prompt is {prompt_tokens} tokens, which leaves no room for new ones under the server's "
                f"generation_max_context ({self.max_context} tokens, prompt and new ones together)",
                param="prompt",
                code="context_length_exceeded",
            )
        if asked is None:
            return min(self.max_new_tokens, room)
        if asked > self.max_new_tokens:
            raise GenerateError(
                400,
                f"max_tokens {asked} is over the server's generation_max_new_tokens ({self.max_new_tokens})",
                param="max_tokens",
                code="max_tokens_exceeded",
            )
        if asked > room:
            raise GenerateError(
                400,
                f"the prompt ({prompt_tokens} tokens) and max_tokens ({asked}) make {prompt_tokens + asked} "
                f"tokens, over the server's generation_max_context ({self.max_context})",
                param="max_tokens",
                code="context_length_exceeded",
            )
        return asked


class Slots:
    """At most `limit` generations at once; one more is refused with a 429 rather than queued, so that a
    client's wait is its own choice (its retry) and never a held connection."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._free = threading.BoundedSemaphore(limit)

    def take(self) -> None:
        if not self._free.acquire(blocking=False):
            raise GenerateError(
                429,
                f"{self.limit} generations are running, the server's generation_max_concurrent; try again soon",
                code="generation_max_concurrent",
            )

    def give_back(self) -> None:
        self._free.release()
