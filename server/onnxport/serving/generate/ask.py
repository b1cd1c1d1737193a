"""A generation request once read, whichever API it came by: what to continue (a text, token ids or chat
messages), how to sample, and how to answer. triton_wire.py and openai_wire.py make one; runs.py runs it."""

from __future__ import annotations

from dataclasses import dataclass

from onnxport.json_boundary import JsonObject
from onnxport.serving.generate import fields
from onnxport.serving.generate.failures import bad_field

ChatMessage = dict[str, str]  # {"role": ..., "content": ...}, as a chat template reads it


@dataclass(frozen=True)
class Knobs:
    """How to sample, as the client asked (both APIs name these alike)."""

    max_tokens: int | None = None  # None: as many as the budgets leave
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ask:
    model: str
    version: str | None = None  # Triton's /versions/<v>/: None is the model's one version
    prompt: str | None = None
    prompt_ids: tuple[int, ...] | None = None  # OpenAI's prompt as token ids
    messages: tuple[ChatMessage, ...] | None = None  # a chat: the model's chat template makes the prompt
    knobs: Knobs = Knobs()
    stream: bool = False
    include_usage: bool = False  # OpenAI's stream_options.include_usage: a last chunk with the counts
    prompt_field: str = "prompt"  # the prompt's field in this API, for messages: Triton's is text_input


SAMPLING = ("max_tokens", "temperature", "top_k", "top_p", "seed", "stop")
MAX_SEED = 2**63 - 1


def knobs(obj: JsonObject, where: str = "") -> Knobs:
    """The sampling fields of obj, checked (where: the field names' prefix in messages, e.g. "parameters.")."""
    seed = fields.optional_whole(obj, "seed", 0, where)
    if seed is not None and seed > MAX_SEED:
        raise bad_field(where + "seed", f"a whole number from 0 to {MAX_SEED}", seed)
    return Knobs(
        max_tokens=fields.optional_whole(obj, "max_tokens", 1, where),
        temperature=fields.number(obj, "temperature", 0.0, 0.0, 2.0, where),
        top_k=fields.optional_whole(obj, "top_k", 0, where) or 0,
        top_p=fields.number(obj, "top_p", 1.0, 0.0, 1.0, where, above=True),
        seed=seed,
        stop=fields.stops(obj, "stop", where),
    )
