"""OpenAI's API as the official clients speak it: `POST /v1/completions`, `POST /v1/chat/completions` (whole
answers with usage counts, or `stream: true`: `data: {chunk}` events ending with `data: [DONE]`) and
`GET /v1/models`.

Fields this server has no use for are taken at their neutral values only (n 1, echo false, no logprobs, no
penalties), so that a request is never answered as if something it asked for had been done; anything else is a
400 naming the field. A generation ended by the time limit says "length": OpenAI's reasons are stop and length.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

from onnxport.json_boundary import JsonObject
from onnxport.serving.generate import fields
from onnxport.serving.generate.ask import SAMPLING, Ask, ChatMessage, knobs
from onnxport.serving.generate.failures import GenerateError, bad_field

# Taken, and only at these values (None: absent or null).
NEUTRAL: dict[str, tuple[object, ...]] = {
    "n": (None, 1),
    "best_of": (None, 1),
    "echo": (None, False),
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "frequency_penalty": (None, 0, 0.0),
    "presence_penalty": (None, 0, 0.0),
    "suffix": (None, ""),
    "logit_bias": (None, {}),
    "response_format": (None, {"type": "text"}),
}
# Bookkeeping the answer does not depend on: its type, and the words of it.
IGNORED: dict[str, tuple[type, str]] = {
    "user": (str, "a string"),
    "metadata": (dict, "an object"),
    "store": (bool, "true or false"),
    "service_tier": (str, "a string"),
}
COMMON = ("model", *SAMPLING, "stream", "stream_options", *NEUTRAL, *IGNORED)
COMPLETION_FIELDS = ("prompt", *COMMON)
CHAT_FIELDS = ("messages", "max_completion_tokens", *COMMON)
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
FINISH = {"stop": "stop", "length": "length", "time": "length", "cancelled": "length"}


def completion_ask(body: bytes) -> Ask:
    obj = fields.json_object(body)
    fields.only_known(obj, COMPLETION_FIELDS)
    model = _common(obj)
    prompt = obj.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        return _streaming(Ask(model, prompt=prompt, knobs=knobs(obj)), obj)
    ids = prompt if isinstance(prompt, list) else None
    if ids and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids):
        return _streaming(Ask(model, prompt_ids=tuple(ids), knobs=knobs(obj)), obj)
    raise bad_field("prompt", "a string, or a list of token ids (one prompt per request)", prompt)


def chat_ask(body: bytes) -> Ask:
    obj = fields.json_object(body)
    fields.only_known(obj, CHAT_FIELDS)
    model = _common(obj)
    if obj.get("max_completion_tokens") is not None:
        if obj.get("max_tokens") is not None:
            raise GenerateError(400, "send max_tokens or max_completion_tokens, not both", "max_completion_tokens")
        fields.optional_whole(obj, "max_completion_tokens", 1)
        obj = {**obj, "max_tokens": obj["max_completion_tokens"]}
    raw = obj.get("messages")
    if not isinstance(raw, list) or not raw:
        raise bad_field("messages", "a non-empty list of messages", raw)
    messages = tuple(_message(m, f"messages[{i}]") for i, m in enumerate(raw))
    return _streaming(Ask(model, messages=messages, knobs=knobs(obj)), obj)


def _common(obj: JsonObject) -> str:
    for name, allowed in NEUTRAL.items():
        if not any(_same(obj.get(name), value) for value in allowed):
            shown = " or ".join(repr(a) for a in allowed if a is not None) or "null"
            raise GenerateError(
                400, f"field {name!r}: this server supports only {shown}, got {obj[name]!r}", param=name
            )
    for name, (kind, words) in IGNORED.items():
        if obj.get(name) is not None and not isinstance(obj[name], kind):
            raise bad_field(name, words, obj[name])
    model = fields.text(obj, "model")
    if not model:
        raise bad_field("model", "a model's name (GET /v1/models lists them)", model)
    return model


def _same(value: object, allowed: object) -> bool:
    """JSON's equality: true is not 1, but 1.0 is 1."""
    return isinstance(value, bool) == isinstance(allowed, bool) and value == allowed


def _streaming(ask: Ask, obj: JsonObject) -> Ask:
    """ask with stream and stream_options.include_usage as obj asks."""
    stream = fields.boolean(obj, "stream", False)
    options = obj.get("stream_options")
    if options is None:
        return replace(ask, stream=stream)
    if not isinstance(options, dict):
        raise bad_field("stream_options", 'an object such as {"include_usage": true}', options)
    fields.only_known(options, ("include_usage", "continuous_usage_stats"), "stream_options.")
    if not stream:
        raise GenerateError(400, "field 'stream_options': only with stream true", param="stream_options")
    fields.boolean(options, "continuous_usage_stats", False, "stream_options.")  # taken, not used
    return replace(ask, stream=True, include_usage=fields.boolean(options, "include_usage", False, "stream_options."))


def _message(raw: object, where: str) -> ChatMessage:
    if not isinstance(raw, dict):
        raise bad_field(where, 'a message: {"role": ..., "content": ...}', raw)
    fields.only_known(raw, ("role", "content", "name"), where + ".")
    if raw.get("name") is not None and not isinstance(raw["name"], str):
        raise bad_field(where + ".name", "a string", raw["name"])
    role = raw.get("role")
    if role not in ROLES:
        raise bad_field(where + ".role", f"one of {', '.join(ROLES)}", role)
    content = raw.get("content")
    if isinstance(content, list):  # content parts: text only
        parts = [p.get("text") if isinstance(p, dict) and p.get("type") == "text" else None for p in content]
        if all(isinstance(p, str) for p in parts):
            content = "".join(p for p in parts if isinstance(p, str))
    if not isinstance(content, str):
        raise bad_field(where + ".content", 'a string, or a list of {"type": "text", "text": ...} parts', content)
    return {"role": ROLES[role], "content": content}


def new_id(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:24]}"


def now() -> int:
    return int(time.time())


def usage(prompt_tokens: int, completion_tokens: int) -> JsonObject:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def completion(
    id_: str, created: int, model: str, text: str, finish: str, prompt_tokens: int, generated: int
) -> JsonObject:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": FINISH[finish]}
    return {
        "id": id_,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage(prompt_tokens, generated),
    }


def completion_chunk(id_: str, created: int, model: str, text: str, finish: str | None) -> JsonObject:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish and FINISH[finish]}
    return {"id": id_, "object": "text_completion", "created": created, "model": model, "choices": [choice]}


def chat_completion(
    id_: str, created: int, model: str, text: str, finish: str, prompt_tokens: int, generated: int
) -> JsonObject:
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "logprobs": None,
        "finish_reason": FINISH[finish],
    }
    return {
        "id": id_,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage(prompt_tokens, generated),
    }


def chat_chunk(id_: str, created: int, model: str, delta: JsonObject, finish: str | None) -> JsonObject:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish and FINISH[finish]}
    return {"id": id_, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [choice]}


def usage_chunk(id_: str, created: int, model: str, chat: bool, prompt_tokens: int, generated: int) -> JsonObject:
    """stream_options.include_usage's last chunk: no choices, the counts."""
    kind = "chat.completion.chunk" if chat else "text_completion"
    return {
        "id": id_,
        "object": kind,
        "created": created,
        "model": model,
        "choices": [],
        "usage": usage(prompt_tokens, generated),
    }


def models(names: list[str], created: int) -> JsonObject:
    return {
        "object": "list",
        "data": [{"id": name, "object": "model", "created": created, "owned_by": "onnxport"} for name in names],
    }


def error(exc: GenerateError) -> JsonObject:
    """OpenAI's error object: the clients read its message, type, param and code."""
    kind = {404: "not_found_error", 429: "rate_limit_error"}.get(exc.status, "invalid_request_error")
    code = exc.code or {404: "model_not_found"}.get(exc.status)
    return {"error": {"message": exc.message, "type": kind, "param": exc.param, "code": code}}
