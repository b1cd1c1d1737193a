"""The report a browser sends (POST /api/fleet/reports) as strict pydantic models: every field of
the fleet contract (docs/reference/fleet.md), and nothing else."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, ValidationError, field_validator

from onnxport.errors import OnnxportError
from onnxport.serving.fleet.classes import ADAPTER_CHARS, BUCKET_NAMES, ENGINES, normalize
from onnxport.serving.v2 import json_budget, request_schema

MAX_BYTES = 16 * 1024
MAX_RESULTS = 8
MAX_MS = 3_600_000  # an hour: no browser waits longer for one run
CLIENT_RULE = "22 to 64 characters of [A-Za-z0-9_-]"
STRICT = ConfigDict(extra="forbid", strict=True)

# Printable text only: these strings are shown on the operator's page and in /metrics labels.
Printable = Annotated[StrictStr, Field(pattern=r"^[^\x00-\x1f\x7f]*$")]
Millis = Annotated[StrictFloat | StrictInt, Field(ge=0, lt=MAX_MS, allow_inf_nan=False)]
Number = Annotated[StrictFloat | StrictInt, Field(allow_inf_nan=False)]
Engine = Literal[ENGINES]  # type: ignore[valid-type]
Cores = Literal[BUCKET_NAMES]  # type: ignore[valid-type]


class DeviceClass(BaseModel):
    model_config = STRICT
    engine: Engine
    engine_major: Annotated[StrictInt, Field(ge=0, le=9999)] | None
    adapter_vendor: Annotated[Printable, Field(max_length=ADAPTER_CHARS)]
    adapter_architecture: Annotated[Printable, Field(max_length=ADAPTER_CHARS)]
    software_adapter: bool
    cores: Cores

    @field_validator("adapter_vendor", "adapter_architecture")
    @classmethod
    def _normalized(cls, value: str) -> str:
        return normalize(value)


class Metric(BaseModel):
    model_config = STRICT
    name: Annotated[Printable, Field(min_length=1, max_length=64)]
    value: Number | None
    limit: Number | None


class Result(BaseModel):
    model_config = STRICT
    model: Annotated[Printable, Field(min_length=1, max_length=128)]
    variant: Annotated[Printable, Field(min_length=1, max_length=32)]
    form: Annotated[Printable, Field(min_length=1, max_length=32)] | None
    sha256: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
    runtime: Annotated[StrictStr, Field(pattern=r"^[a-z0-9-]{1,32}$")]
    threads: Annotated[StrictInt, Field(ge=1, le=64)] | None
    verdict: Literal["pass", "fail"]
    metric: Metric | None
    create_ms: Millis | None
    first_run_ms: Millis | None
    warm_run_ms: Millis | None


class Report(BaseModel):
    model_config = STRICT
    schema_: Literal[1] = Field(alias="schema")
    client: Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_-]{22,64}$")]
    device: DeviceClass
    results: Annotated[list[Result], Field(min_length=1, max_length=MAX_RESULTS)]


class ReportError(OnnxportError):
    """The body is no report: status 400 (not JSON) or 422 (JSON, not a report); the message names the field."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def parse(body: bytes) -> Report:
    try:
        json_budget.check(body, BUDGET)
    except json_budget.BudgetExceeded as over:
        words, most = _OVER[over.what]
        raise ReportError(
            400,
            f"the body is not a report: its JSON has more than {over.limit:,} {words} by byte "
            f"{over.offset:,} (a report has at most {most})",
        ) from None
    try:
        # Decoded as UTF-8 here: json.loads would also take UTF-16 and UTF-32, which the budget's scan cannot read.
        document = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except ValueError as exc:  # UnicodeDecodeError is one
        raise ReportError(400, f"the body is not JSON: {exc}") from None
    except RecursionError:  # cannot happen within the budget's depth; kept as the last guard
        raise ReportError(400, "the body is not a report: JSON nested too deep") from None
    try:
        return Report.model_validate(document)
    except ValidationError as exc:
        raise ReportError(422, _describe(exc, document)) from None


# What a report's JSON may hold, checked before it is parsed (serving/v2/json_budget.py): twice the keys and
# objects a report can have (4 keys of its own, 6 for the device, 14 per result with its metric; 2 objects and
# 2 per result) and one level of nesting to spare. Strings are bounded by MAX_BYTES.
_KEYS, _OBJECTS, _DEPTH = 4 + 6 + 14 * MAX_RESULTS, 2 + 2 * MAX_RESULTS, 4
BUDGET = json_budget.Budget(keys=2 * _KEYS, objects=2 * _OBJECTS, depth=_DEPTH + 1, string_bytes=None, key_bytes=64)
_OVER = {
    "keys": ("keys", _KEYS),
    "objects": ("objects", _OBJECTS),
    "depth": ("levels of nesting", _DEPTH),
    "key_bytes": ("bytes in one key", "20"),
    "string_bytes": ("bytes of strings", MAX_BYTES),
}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _describe(exc: ValidationError, document: Any) -> str:
    errors = exc.errors(include_url=False)
    if any(e["loc"] == ("client",) for e in errors):  # the token is never echoed: it would reach the log
        return f"field 'client': expected {CLIENT_RULE} (a random token of this browser profile)"
    return request_schema.describe(errors, document, Report)
