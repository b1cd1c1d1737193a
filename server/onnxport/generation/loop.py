"""One generation: a prompt's prefill, then a token at a time until an end, as Pieces of text.

It ends at an end-of-sequence token or a stop string (Finish.STOP), max_new_tokens (LENGTH), the deadline
(TIME: checked before the prefill and after each step, so a step under way finishes first) or cancel()
(CANCELLED, from any thread: checked before the prefill and before and after each step). A stop string never
reaches the caller: text that could be the start of one is held back until the next tokens tell. Every token
gives one Piece, its text "" while held back; the token that ends a generation carries what was held (but a
cancelled generation drops it, and a stop string's start is dropped with it), and `finish` is set before that
last Piece is given. The end-of-sequence token gives a Piece too, with no text of its own.

The cache is freed by close(), which runs however the iteration ends: exhausted, an exception, the
generator closed or collected.
"""

from __future__ import annotations

import inspect
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Generator as PyGenerator
from typing import Iterator, Protocol, Sequence

from onnxport.generation.decoder_session import Cache, DecoderSession
from onnxport.generation.sampling import Sampling, next_token
from onnxport.generation.stop_strings import StopText
from onnxport.generation.text_tokenizer import TextTokenizer


class Finish(StrEnum):
    STOP = "stop"
    LENGTH = "length"
    TIME = "time"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Piece:
    token_id: int
    text: str


@dataclass
class Timing:
    prompt_tokens: int = 0
    generated_tokens: int = 0
    prefill_seconds: float = 0.0
    first_token_seconds: float = 0.0  # from the start of the iteration to the first token chosen
    decode_seconds: float = 0.0  # the steps after the prefill, summed (not the caller's time between tokens)

    @property
    def tokens_per_second(self) -> float:
        """Decode speed: the tokens after the first (each one step) over the steps' time; 0 before two tokens."""
        steps = self.generated_tokens - 1
        return steps / self.decode_seconds if steps > 0 and self.decode_seconds > 0 else 0.0


class HasDecoder(Protocol):
    """A DecoderFolder, or anything else that holds a decoder and its tokenizer."""

    @property
    def decoder(self) -> DecoderSession: ...
    @property
    def tokenizer(self) -> TextTokenizer: ...


class Generation:
    def __init__(
        self,
        source: HasDecoder | tuple[DecoderSession, TextTokenizer],
        prompt_ids: Sequence[int],
        sampling: Sampling,
        deadline: float | None = None,
    ):
        """source: a DecoderFolder or (decoder, tokenizer); deadline: a time.monotonic() time. Nothing runs until
        the iteration starts; a caller refuses a prompt over its max context by prompt_length first."""
        self.decoder, self.tokenizer = source if isinstance(source, tuple) else (source.decoder, source.tokenizer)
        if len(prompt_ids) == 0:
            raise ValueError("prompt_ids: expected at least one token id, got none")
        self.prompt_ids = list(prompt_ids)
        self.sampling = sampling.checked()
        self.deadline = deadline
        self.token_ids: list[int] = []
        self.finish: Finish | None = None  # None while running, and after an exception
        self.timing = Timing(prompt_tokens=len(self.prompt_ids))
        self._pieces: list[str] = []
        self._cancelled = threading.Event()
        self._cache: Cache | None = None
        self._generator: PyGenerator[Piece, None, None] | None = None
        self._closed = False
        self._failed = False  # the iteration raised: no finish

    @property
    def prompt_length(self) -> int:
        return len(self.prompt_ids)

    @property
    def text(self) -> str:
        """The text given so far."""
        return "".join(self._pieces)

    @property
    def cache(self) -> Cache | None:
        """The cache while the generation runs (None before it starts and once it is freed)."""
        return self._cache

    def __iter__(self) -> Iterator[Piece]:
        if self._generator is not None or self._closed:
            raise RuntimeError("a Generation is iterated once")
        self._generator = self._run()
        return self._generator

    def __enter__(self) -> Generation:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def cancel(self) -> None:
        """End the generation before its next step (any thread)."""
        self._cancelled.set()

    def close(self) -> None:
        """Free the cache; idempotent. From another thread while a step runs, it cancels, and the iterating
        thread frees the cache on its way out."""
        generator = self._generator
        if generator is not None and inspect.getgeneratorstate(generator) == inspect.GEN_RUNNING:
            self.cancel()
            return
        if generator is not None:
            generator.close()  # runs the generator's finally, when it is suspended mid-iteration
        self._release()

    def _release(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if not self._closed and self.finish is None and self._generator is not None and not self._failed:
            self.finish = Finish.CANCELLED
        self._closed = True

    def _run(self) -> PyGenerator[Piece, None, None]:
        try:
            yield from self._steps()
        except GeneratorExit:
            raise
        except BaseException:
            self._failed = True
            raise
        finally:
            self._release()

    def _steps(self) -> Iterator[Piece]:
        start = time.monotonic()
        if self._cancelled.is_set():
            self.finish = Finish.CANCELLED
            return
        if self._past_deadline():
            self.finish = Finish.TIME
            return
        self._cache = self.decoder.new_cache()
        rng = self.sampling.rng()
        stream = self.tokenizer.stream()
        stops = StopText(self.sampling.stop)
        eos = set(self.tokenizer.eos_token_ids)
        logits = self.decoder.step(self.prompt_ids, self._cache)
        self.timing.prefill_seconds = time.monotonic() - start
        while not self._cancelled.is_set():
            token = next_token(logits, self.sampling, rng)
            if not self.token_ids:
                self.timing.first_token_seconds = time.monotonic() - start
            self.token_ids.append(token)
            self.timing.generated_tokens = len(self.token_ids)
            finish = self._finish_after(token, eos)
            text, stopped = stops.push("" if token in eos else stream.push(token))
            if stopped:
                finish = Finish.STOP
            elif finish is not None:  # the last token: the held text goes with it, unless it holds a stop string
                more, stopped = stops.push(stream.flush())
                text += more if stopped else more + stops.flush()
                finish = Finish.STOP if stopped else finish
            self._pieces.append(text)
            self.finish = finish  # set before the last Piece is given, so that its reader knows it is the last
            yield Piece(token, text)
            if finish is not None or self._cancelled.is_set():
                break
            step_start = time.monotonic()
            logits = self.decoder.step([token], self._cache)
            self.timing.decode_seconds += time.monotonic() - step_start
        if self.finish is None:
            self.finish = Finish.CANCELLED

    def _finish_after(self, token: int, eos: set[int]) -> Finish | None:
        """The finish this token brings, before its text is read (a stop string is found in the text)."""
        if token in eos:
            return Finish.STOP
        if len(self.token_ids) >= self.sampling.max_new_tokens:
            return Finish.LENGTH
        if self._past_deadline():
            return Finish.TIME
        return None

    def _past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline
