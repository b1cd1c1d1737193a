"""The V2 inference request as strict pydantic models: every field the protocol allows, and nothing else.

The Open Inference Protocol's REST request (KServe and Triton) is `{id?, parameters?, inputs, outputs?}`;
each input `{name, shape, datatype, parameters?, data?}`, each output `{name, parameters?}`. Parameters
are open-ended in the protocol, so the ones we do not act on are refused by name (a client asking for
shared memory or classification outputs must hear that it did not get them, not get a plain answer).
Tensor `data` is checked by protocol.py (its nesting against the shape, its values against the datatype),
where the datatype is known. These models also give /v2/openapi.json its request schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError
from pydantic_core import ErrorDetails

from onnxport.dtypes import DTYPES
from onnxport.errors import OnnxportError

# The V2 datatypes, in the order of onnxport/dtypes.py (/v2/openapi.json lists them so).
Datatype: TypeAlias = Literal[tuple(d.v2 for d in DTYPES)]  # type: ignore[valid-type]
MAX_RANK = 32  # onnxruntime's own limit on tensor rank is far above any model's; this bounds nesting
Dim = Annotated[StrictInt, Field(ge=0, le=2**63 - 1)]
STRICT = ConfigDict(extra="forbid", strict=True)


class RequestParameters(BaseModel):
    model_config = STRICT
    binary_data_output: StrictBool | None = Field(
        None, description="binary tensor extension: outputs in binary after the JSON header"
    )


class InputParameters(BaseModel):
    model_config = STRICT
    binary_data_size: Dim | None = Field(
        None, description="binary tensor extension: the input's bytes follow the JSON header"
    )


class OutputParameters(BaseModel):
    model_config = STRICT
    binary_data: StrictBool | None = Field(None, description="this output in binary (overrides binary_data_output)")


class RequestInput(BaseModel):
    model_config = STRICT
    name: StrictStr
    shape: Annotated[list[Dim], Field(max_length=MAX_RANK)]
    datatype: Datatype
    parameters: InputParameters | None = None
    data: Any = Field(None, description="row-major values, flat or nested as the shape; absent with binary_data_size")


class RequestOutput(BaseModel):
    model_config = STRICT
    name: StrictStr
    parameters: OutputParameters | None = None


class InferenceRequest(BaseModel):
    model_config = STRICT
    id: StrictStr | None = None
    parameters: RequestParameters | None = None
    inputs: Annotated[list[RequestInput], Field(min_length=1)]
    outputs: list[RequestOutput] | None = None


# What a refused parameter would have asked for, so the message says what is missing.
UNSUPPORTED = {
    "shared_memory_region": "the shared-memory extension",
    "shared_memory_byte_size": "the shared-memory extension",
    "shared_memory_offset": "the shared-memory extension",
    "classification": "the classification extension",
}


class RequestError(OnnxportError):
    """The request does not follow the protocol (HTTP 400); the message names the field."""


def validate(header: Any) -> InferenceRequest:
    try:
        return InferenceRequest.model_validate(header)
    except ValidationError as exc:
        raise RequestError(describe(exc.errors(include_url=False), header)) from None


def describe(errors: Sequence[ErrorDetails], header: Any, root: type[BaseModel] | None = None) -> str:
    """pydantic's first error as one line: where (the input by name), what was expected, what came.
    root: the model validated (InferenceRequest when None), whose fields an unknown one is told of."""
    errors = sorted(errors, key=lambda e: e["type"] != "missing")  # a missing field explains the rest
    error = errors[0]
    loc = error["loc"]
    where = _location(loc, header)
    kind, field = error["type"], str(loc[-1]) if loc else ""
    if kind == "extra_forbidden":
        if field in UNSUPPORTED:
            return f"{where}: {UNSUPPORTED[field]} is not supported by this server"
        return f"{where}: unknown field; allowed here: {', '.join(_allowed(loc, root or InferenceRequest))}"
    if kind == "missing":
        return f"{where}: required, missing"
    if kind == "too_short":
        return f"{where}: must be a non-empty list"
    message = f"{where}: {error['msg'][0].lower()}{error['msg'][1:]}, got {_shown(error.get('input'))}"
    if len(loc) > 3 and loc[0] == "inputs" and loc[2] == "shape":
        message += f" (shape {_shown(header['inputs'][loc[1]]['shape'])})"
    more = len(errors) - 1
    return message + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def _location(loc: tuple, header: Any) -> str:
    """ "input 'x' (inputs[0]) field 'shape[1]'", "outputs[2] field 'name'", "field 'inputs'"."""
    prefix, rest = "", list(loc)
    if len(rest) >= 2 and rest[0] in ("inputs", "outputs") and isinstance(rest[1], int):
        kind, index = rest[0], rest[1]
        prefix = f"{kind}[{index}]"
        try:
            name = header[kind][index]["name"]
        except (KeyError, IndexError, TypeError):
            name = None
        if isinstance(name, str):
            prefix = f"{kind[:-1]} {name!r} ({prefix})"
        rest = rest[2:]
    dotted = ""
    for part in rest:
        dotted += f"[{part}]" if isinstance(part, int) else (f".{part}" if dotted else str(part))
    if not dotted:
        return prefix or "the request"
    return f"{prefix} field {dotted!r}" if prefix else f"field {dotted!r}"


def _allowed(loc: tuple, model: type[BaseModel]) -> list[str]:
    """The fields of the model (inside `model`) that holds the unknown one."""
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[part].annotation
        model = next((a for a in _members(annotation) if isinstance(a, type) and issubclass(a, BaseModel)), model)
    return [field.alias or name for name, field in model.model_fields.items()]  # as the client writes them


def _members(annotation: Any) -> list[Any]:
    """The classes inside `X | None`, `list[X]` and `Annotated[list[X], ...]`."""
    found, stack = [], [annotation]
    while stack:
        item = stack.pop()
        args = get_args(item)
        if args:
            stack.extend(a for a in args if a is not type(None))
        else:
            found.append(item)
    return found


def _shown(value: Any) -> str:
    text = repr(value)
    kind = type(value).__name__
    return f"{kind} {text[:60] + '...' if len(text) > 60 else text}"
