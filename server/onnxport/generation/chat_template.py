"""A model's chat template: messages made one prompt text, as Transformers' apply_chat_template renders it.

The template is Jinja from the model's folder (chat_template.jinja), so it runs in Jinja's immutable sandbox
with the options and helpers Transformers gives it (trim_blocks, lstrip_blocks, loop controls,
raise_exception, a tojson that keeps non-ASCII text), and add_generation_prompt=True: the prompt ends where the
assistant's answer starts.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Mapping, NoReturn, Sequence

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class ChatError(ValueError):
    """The chat cannot be rendered: no template, a malformed message, or the template refused the messages."""


Message = Mapping[str, object]


class ChatTemplate:
    def __init__(self, source: str, *, label: str = "chat_template.jinja", special: Mapping[str, str] | None = None):
        """source: the Jinja text; special: the special tokens' texts the template may name (bos_token,
        eos_token). A template that does not compile raises ChatError naming label."""
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            self._template = env.from_string(source)
        except jinja2.TemplateError as exc:
            raise ChatError(f"{label} is not a valid Jinja template: {exc}") from exc
        self._label = label
        self._special = dict(special or {})

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text for these messages, ending with the assistant's turn."""
        checked = [dict(_checked(i, m)) for i, m in enumerate(_listed(messages))]
        try:
            return self._template.render(messages=checked, add_generation_prompt=True, **self._special)
        except jinja2.TemplateError as exc:
            raise ChatError(f"{self._label} refused the messages: {exc}") from exc


def _listed(messages: object) -> list[object]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ChatError(f"messages: expected a non-empty list of messages, got {_short(messages)}")
    return list(messages)


def _checked(index: int, message: object) -> Mapping[str, str]:
    if not isinstance(message, Mapping):
        raise ChatError(f"messages[{index}]: expected an object with role and content strings, got {_short(message)}")
    for field in ("role", "content"):
        value = message.get(field)
        if not isinstance(value, str):
            raise ChatError(f"messages[{index}].{field}: expected a string, got {_short(value)}")
    return {"role": str(message["role"]), "content": str(message["content"])}


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _tojson(value: object, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _raise(message: str) -> NoReturn:
    raise jinja2.TemplateError(message)
