"""One generation from request to its end: the model found, the prompt tokenized, the budgets checked, a slot
taken, the tokens pulled, and on close (however the request ended: done, failed, or its client gone) the
generation cancelled, its KV cache freed, the slot given back and the metrics told."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

from onnxport.generation.chat_template import ChatError
from onnxport.generation.decoder_folder import DecoderFolder
from onnxport.generation.loop import Generation, Piece
from onnxport.generation.sampling import Sampling, SamplingError
from onnxport.runtime import SessionSettings
from onnxport.serving.config import ServerSettings
from onnxport.serving.generate.ask import Ask
from onnxport.serving.generate.budgets import Budgets, Slots
from onnxport.serving.generate.failures import GenerateError
from onnxport.serving.generate.metrics import GenerationMetrics
from onnxport.serving.generate.registry import FolderModels, GenerationModels, RepositoryModels, ServedModels
from onnxport.serving.generate.tallies import Tallies

log = logging.getLogger("onnxport.server")
# The WSGI environ key under which an engine hands the routes its check of the client: a callable, True once the
# client has closed its connection (serving/waitress/client_gone.py; the others have none).
CLIENT_GONE = "onnxport.client_gone"
# The status of an answer nobody will read, for the request log (nginx's "client closed request").
CLIENT_CLOSED = 499


def staying() -> bool:
    """The client check where the engine has none (Flask's test client, Ray Serve): never gone."""
    return False


class Service:
    """What the generation routes share: the models, the budgets, the slots and (once /metrics has a registry)
    the metrics. Framework-free: the blueprints hand it an Ask and stream what it returns."""

    def __init__(self, models: GenerationModels, budgets: Budgets) -> None:
        self.models = models
        self.budgets = budgets
        self.slots = Slots(budgets.max_concurrent)
        self.metrics: GenerationMetrics | None = None
        self.tallies = Tallies()  # Triton's statistics of the generation models

    @classmethod
    def of(cls, settings: ServerSettings, session: SessionSettings | None = None) -> Service:
        """The generation models of settings and the repository, their sessions run by `session` (the V2 models'
        SessionPool's)."""
        models = ServedModels(
            FolderModels(settings["generation_models"], session), RepositoryModels(settings["repository"], session)
        )
        return cls(models, Budgets.of(settings))

    def start(self, ask: Ask, gone: Callable[[], bool] = staying) -> Run:
        """A Run ready to pull tokens from, or a GenerateError (404, 400, 429) before any work. gone: whether
        the client has closed its connection, asked before each token (the engine's check, or never)."""
        started = time.perf_counter()
        version, folder = self.models.find(ask.model, ask.version)
        prompt_ids = _prompt_ids(folder, ask, self.budgets)
        new_tokens = self.budgets.new_tokens(ask.knobs.max_tokens, len(prompt_ids))
        k = ask.knobs
        sampling = Sampling(
            max_new_tokens=new_tokens, temperature=k.temperature, top_k=k.top_k, top_p=k.top_p, seed=k.seed, stop=k.stop
        )
        try:
            sampling = sampling.checked()
        except SamplingError as exc:
            raise GenerateError(400, str(exc)) from None
        self.slots.take()
        try:
            generation = Generation(folder, prompt_ids, sampling, deadline=time.monotonic() + self.budgets.seconds)
        except BaseException:
            self.slots.give_back()
            raise
        return Run(self, ask.model, version, generation, len(prompt_ids), started, gone)


def _prompt_ids(folder: DecoderFolder, ask: Ask, budgets: Budgets) -> list[int]:
    tokenizer = folder.tokenizer
    if ask.prompt_ids is not None:
        vocabulary = tokenizer.vocab_size
        outside = next((t for t in ask.prompt_ids if t >= vocabulary), None)
        if outside is not None:
            raise GenerateError(
                400, f"field 'prompt': token id {outside} is outside the vocabulary (0 to {vocabulary - 1})", "prompt"
            )
        return list(ask.prompt_ids)
    if ask.messages is not None:
        budgets.before_tokenizing(sum(len(m["content"]) for m in ask.messages), "messages")
        try:
            chat = tokenizer.chat_prompt(list(ask.messages))
        except ChatError as exc:
            raise GenerateError(400, f"field 'messages': {exc}", param="messages") from None
        ids = tokenizer.encode(chat, add_special_tokens=False)  # the template wrote the special tokens
    else:
        budgets.before_tokenizing(len(ask.prompt or ""), ask.prompt_field)
        ids = tokenizer.encode(ask.prompt or "")
    if not ids:
        field = "messages" if ask.messages is not None else ask.prompt_field
        raise GenerateError(400, f"field {field!r}: the prompt is empty (no tokens)", param=field)
    return ids


class Run:
    def __init__(
        self,
        service: Service,
        model: str,
        version: str,
        generation: Generation,
        prompt_tokens: int,
        started: float,
        gone: Callable[[], bool] = staying,
    ) -> None:
        self.service, self.model, self.version = service, model, version
        self.generation = generation
        self.prompt_tokens = prompt_tokens
        self.generated = 0
        self._gone = gone
        self.client_left = False  # the pieces stopped because the client had closed its connection
        self._started = started
        self._first_token: float | None = None
        self._closed = False
        self._ended = False  # the generation ran to its own end (stop, length, time)
        self._lock = threading.Lock()
        self.metrics = service.metrics  # the one told of the start is the one told of the end
        if self.metrics is not None:
            self.metrics.active.inc()

    def pieces(self) -> Iterator[Piece]:
        """The tokens as they come; before each, the client is asked after, and once it has gone no more
        are made (client_left; close() then ends the generation as cancelled)."""
        made = iter(self.generation)
        while True:
            if self._gone():
                self.client_left = True
                return
            piece = next(made, None)
            if piece is None:
                break
            if self._first_token is None:
                self._first_token = time.perf_counter() - self._started
            self.generated += 1
            yield piece
        self._ended = True

    @property
    def finish(self) -> str:
        """Why it ended (stop, length, time, cancelled); read once the pieces are all pulled."""
        finish = self.generation.finish
        return "cancelled" if finish is None else str(finish)

    @property
    def text(self) -> str:
        return self.generation.text

    def close(self, failed: bool = False) -> None:
        """Idempotent: the first call cancels what is still running, frees the KV cache, gives the slot back."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            if not self._ended:
                self.generation.cancel()
            self.generation.close()
        finally:
            self.service.slots.give_back()
            self._record("error" if failed else self.finish if self._ended else "cancelled")

    def _record(self, finish: str) -> None:
        timing = self.generation.timing
        seconds = time.perf_counter() - self._started
        self.service.tallies.add(
            self.model,
            finish == "error",
            seconds,
            self.prompt_tokens,
            self.generated,
            self._first_token or 0.0,
            timing.decode_seconds,
        )
        metrics = self.metrics
        if metrics is None:
            return
        metrics.active.dec()
        metrics.requests.labels(self.model, finish).inc()
        metrics.tokens.labels(self.model, "prompt").inc(self.prompt_tokens)
        metrics.tokens.labels(self.model, "generated").inc(self.generated)
        if self._first_token is not None:
            metrics.first_token.labels(self.model).observe(self._first_token)
        if self.generated > 1 and timing.decode_seconds > 0:
            metrics.rate.labels(self.model).observe(timing.tokens_per_second)
            metrics.decode_seconds.labels(self.model).inc(timing.decode_seconds)
