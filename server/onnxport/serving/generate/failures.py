"""The client's mistakes on the generation routes: a status, one line naming the input or the limit, and the
field it is about (OpenAI's error object carries it as `param`). Anything else raised there is ours: a 500."""

from __future__ import annotations


class GenerateError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code  # OpenAI's error code: which limit refused the request, e.g. "context_length_exceeded"


def bad_field(field: str, expected: str, value: object) -> GenerateError:
    """A 400 naming the field, what it takes and what came (cut short: a request may be large)."""
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return GenerateError(400, f"field {field!r}: expected {expected}, got {shown}", param=field)
