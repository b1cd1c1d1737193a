"""A started Run as what each route answers: one JSON object, or a stream of Server-Sent Events.

An EventStream is the response body: the WSGI server iterates it and calls its close() when the response
ends, whether all of it was sent or the client went away (waitress stops at the first write to a closed
connection); close() ends the Run, so the generation is cancelled and its KV cache freed right there. A whole
answer writes nothing until it is done: there the engine's check of the client (`gone`, asked before each token)
is what ends it early.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator

from onnxport.json_boundary import JsonObject
from onnxport.serving.generate import openai_wire, triton_wire
from onnxport.serving.generate.ask import Ask
from onnxport.serving.generate.failures import GenerateError
from onnxport.serving.generate.runs import CLIENT_CLOSED, Run, Service, staying

log = logging.getLogger("onnxport.server")
EVENT_STREAM = "text/event-stream; charset=utf-8"
DONE = b"data: [DONE]\n\n"


def event(value: JsonObject) -> bytes:
    return b"data: " + json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


class EventStream:
    def __init__(self, run: Run, events: Iterator[JsonObject], done: bool = False) -> None:
        self.run = run
        self._events = events
        self._done = done  # OpenAI's streams end with `data: [DONE]`

    def __iter__(self) -> Iterator[bytes]:
        try:
            for value in self._events:
                yield event(value)
        except Exception as exc:  # ours, after the 200 went out: said as the stream's last event
            request_id = uuid.uuid4().hex[:16]
            log.error("generation request %s failed", request_id, exc_info=exc)
            message = f"internal error (request id {request_id})"
            yield event({"error": {"message": message, "type": "server_error"}} if self._done else {"error": message})
            self.run.close(failed=True)
            return
        self.run.close()
        if self._done:
            yield DONE

    def close(self) -> None:
        self.run.close()


def _whole(run: Run) -> str:
    """The text, made whole before anything is written; a client that closes its connection meanwhile ends
    it at the next token (cancelled, the KV cache and the slot given back) rather than at max_tokens."""
    try:
        for _ in run.pieces():
            pass
    except BaseException:
        run.close(failed=True)
        raise
    run.close()
    if run.client_left:
        raise GenerateError(
            CLIENT_CLOSED, f"the client closed its connection: generation cancelled after {run.generated} tokens"
        )
    return run.text


def generate(service: Service, ask: Ask, gone: Callable[[], bool] = staying) -> JsonObject:
    run = service.start(ask, gone)
    text = _whole(run)
    return triton_wire.answer(run.model, run.version, text, run.finish, run.prompt_tokens, run.generated)


def generate_stream(service: Service, ask: Ask, gone: Callable[[], bool] = staying) -> EventStream:
    run = service.start(ask, gone)

    def events() -> Iterator[JsonObject]:
        for piece in run.pieces():
            yield triton_wire.token_event(run.model, run.version, piece.text)
        yield triton_wire.answer(run.model, run.version, "", run.finish, run.prompt_tokens, run.generated)

    return EventStream(run, events())


def completion(service: Service, ask: Ask, gone: Callable[[], bool] = staying) -> JsonObject | EventStream:
    """/v1/completions (ask.messages None) or /v1/chat/completions: whole, or streamed as OpenAI's chunks."""
    run = service.start(ask, gone)
    chat = ask.messages is not None
    id_, created = openai_wire.new_id("chatcmpl" if chat else "cmpl"), openai_wire.now()
    if not ask.stream:
        text = _whole(run)
        answer = openai_wire.chat_completion if chat else openai_wire.completion
        return answer(id_, created, ask.model, text, run.finish, run.prompt_tokens, run.generated)

    def events() -> Iterator[JsonObject]:
        if chat:
            yield openai_wire.chat_chunk(id_, created, ask.model, {"role": "assistant", "content": ""}, None)
        for piece in run.pieces():
            if chat:
                yield openai_wire.chat_chunk(id_, created, ask.model, {"content": piece.text}, None)
            else:
                yield openai_wire.completion_chunk(id_, created, ask.model, piece.text, None)
        if chat:
            yield openai_wire.chat_chunk(id_, created, ask.model, {}, run.finish)
        else:
            yield openai_wire.completion_chunk(id_, created, ask.model, "", run.finish)
        if ask.include_usage:
            yield openai_wire.usage_chunk(id_, created, ask.model, chat, run.prompt_tokens, run.generated)

    return EventStream(run, events(), done=True)
