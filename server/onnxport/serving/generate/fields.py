"""Reading a generation request's JSON: the body as an object, then each field by the rule it takes. Every
refusal is a 400 naming the field (failures.bad_field). Whole numbers may come as 3.0: JSON Schema (the
OpenAPI document's) counts them integers, so the server does too."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from onnxport.json_boundary import JsonObject
from onnxport.serving.generate.failures import GenerateError, bad_field

MAX_STOPS = 16  # stop strings per request: each is searched for after every token
MAX_STOP_CHARS = 256


def json_object(body: bytes) -> JsonObject:
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise GenerateError(400, f"the body is not JSON: {exc}") from None
    except RecursionError:
        raise GenerateError(400, "the body is not JSON this server reads: it nests too deep") from None
    if not isinstance(value, dict):
        raise GenerateError(400, f"the body must be a JSON object, got {type(value).__name__}")
    _whole_unicode(value)
    return value


def _whole_unicode(value: object) -> None:
    """JSON may spell half a surrogate pair (\\ud800) that no UTF-8 can carry: a 400 naming where, before a
    tokenizer or an answer trips on it. Walked with a list, not recursion: the nesting is the client's."""
    pending: list[tuple[object, str]] = [(value, "")]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise GenerateError(
                    400,
                    f"field {where or 'body'!r}: a lone surrogate (half of a \\uXXXX pair) is no text",
                    where or None,
                ) from None
        elif isinstance(item, dict):
            pending.extend((key, where) for key in item)
            pending.extend((v, f"{where}.{k}" if where else str(k)) for k, v in item.items())
        elif isinstance(item, list):
            pending.extend((v, f"{where}[{i}]") for i, v in enumerate(item))


def only_known(obj: JsonObject, known: Iterable[str], where: str = "") -> None:
    names = list(known)
    unknown = sorted(set(obj) - set(names))
    if unknown:
        field = where + unknown[0]
        raise GenerateError(
            400, f"unknown field {field!r}; known: {', '.join(names)}", param=field, code="unknown_field"
        )


def text(obj: JsonObject, name: str, where: str = "", default: str | None = None) -> str:
    value = obj.get(name, default)
    if not isinstance(value, str):
        raise bad_field(where + name, "a string", value)
    return value


def optional_whole(obj: JsonObject, name: str, low: int, where: str = "") -> int | None:
    """A whole number of at least `low`, or None when absent or null."""
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise bad_field(where + name, f"a whole number, {low} or more", value)
    return value


def number(
    obj: JsonObject, name: str, default: float, low: float, high: float, where: str = "", above: bool = False
) -> float:
    """A number from low (above it, when `above`) to high; absent or null: the default."""
    value = obj.get(name)
    if value is None:
        return default
    rule = f"a number above {low:g}, at most {high:g}" if above else f"a number from {low:g} to {high:g}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad_field(where + name, rule, value)
    if not (low < value if above else low <= value) or value > high:
        raise bad_field(where + name, rule, value)
    return float(value)


def boolean(obj: JsonObject, name: str, default: bool, where: str = "") -> bool:
    value = obj.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_field(where + name, "true or false", value)
    return value


def stops(obj: JsonObject, name: str, where: str = "") -> tuple[str, ...]:
    """Stop strings: one string or a list of them (OpenAI's `stop`, Triton's `stop`), none empty."""
    value = obj.get(name)
    if value is None:
        return ()
    found = [value] if isinstance(value, str) else value
    expected = f"a string or a list of at most {MAX_STOPS} non-empty strings of at most {MAX_STOP_CHARS} characters"
    if (
        not isinstance(found, list)
        or len(found) > MAX_STOPS
        or not all(isinstance(s, str) and 0 < len(s) <= MAX_STOP_CHARS for s in found)
    ):
        raise bad_field(where + name, expected, value)
    return tuple(found)
