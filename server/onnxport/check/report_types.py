"""The conformance report's parts as types: a row, an engine's identity and plan, a finding, a divergence, the
report (docs/reference/conformance.md, "The conformance report", documents every key).

The browser rows arrive as the conformance page wrote them (harness/conformance_page.py, a JSON boundary): they
are read as CheckRow from there on. Parts the page or the judgement fill in whole (an output's errors, a metric,
a tolerance, a placement) stay JsonObject.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from onnxport.accuracy.measured import ElementTolerance
from onnxport.accuracy.reasons import Reason
from onnxport.json_boundary import JsonObject


class Timings(TypedDict, total=False):
    create_ms: float | None
    first_run_ms: float | None
    warm_run_ms: float | None
    server_ms: float | None
    fp32_server_ms: float | None


class Divergence(TypedDict, total=False):
    """`--locate`: the first node whose output is outside tolerance, or a note, or why it could not be run."""

    node: str
    op_type: str
    node_index: int
    output: str
    index: list[int]
    expected: object
    got: object
    max_abs: float
    nonfinite: int
    mismatches: int
    reason: str  # the shapes differ
    note: str  # every intermediate value is within tolerance
    error: str  # the debug model did not run


class CheckRow(TypedDict, total=False):
    """One result: a `source` row (the server's fp32 against the source framework), a browser row (a variant or
    form in one runtime of one engine), a pipeline row (`preprocessing`, `answers`), or an engine that could not
    start (`model` `-`)."""

    browser: str | None  # the engine; None in source rows
    model: str
    variant: str
    label: str  # what people are shown, only where it is not `variant`
    runtime: str
    task: str
    form: str | None
    sha256: str
    inputs: int  # pipeline rows: raw inputs compared
    status: str  # pass, fail, error, timeout, unsupported, skipped
    reason: str | None
    reason_data: NotRequired[Reason]  # the reason as data (accuracy/reasons.py), where the page gave it
    rows: int
    outputs: dict[str, JsonObject]  # output name -> its errors, as compare.py or the page gives them
    metric: JsonObject
    tolerance: ElementTolerance | JsonObject  # a source row's export tolerance, a browser row's table entry
    arithmetic: str
    basis: str  # floor or budget
    floor: JsonObject
    budget: JsonObject | None
    metric_vs_fp32: JsonObject | None
    diagnostic: JsonObject | None
    row_ms: float
    timings: Timings
    identity: JsonObject
    placement: JsonObject | None
    divergence: Divergence


class Adapter(TypedDict, total=False):
    vendor: str
    architecture: str
    device: str
    description: str
    fallback: bool  # a software adapter


class BrowserIdentity(TypedDict, total=False):
    """The page's `browser` object; `onnxport check` adds `engine` and `version`."""

    engine: str
    version: str
    device_kind: str
    user_agent: str
    cross_origin_isolated: bool
    shared_memory: bool
    threads: JsonObject  # most, why
    hardware_concurrency: int
    wasm_simd: bool
    webgpu: bool
    webgpu_reason: str | None
    adapter: Adapter | None
    shader_f16: bool


class WebGpuScope(TypedDict, total=False):
    scope: str  # full, or one per model
    adapter: str
    chosen: dict[str, str]  # model -> the variant run
    left_out: int


class Plan(TypedDict):
    rows: int | None
    webgpu: WebGpuScope | None


class _FindingKey(TypedDict):
    model: str
    variant: str
    form: str | None
    runtime: str
    statuses: dict[str, str]  # engine -> status


class Finding(_FindingKey):
    """Where engines differ on one row: on the status, or on the numbers (all passing)."""

    kind: str  # status or numbers
    text: str
    reasons: NotRequired[dict[str, str | None]]  # engine -> reason
    max_abs: NotRequired[dict[str, float]]  # engine -> max abs to the server


class CheckReport(TypedDict, total=False):
    schema: str
    schema_version: int
    created: str
    browser: BrowserIdentity
    browsers: dict[str, BrowserIdentity]
    findings: list[Finding]
    speed: dict[str, JsonObject]  # harness/speed_ratio.py's sections
    plans: dict[str, Plan]
    webgpu_scope: WebGpuScope
    incomplete: str | None
    tolerances: dict[str, JsonObject]
    results: list[CheckRow]
    server: str
    summary: dict[str, int]


class EngineRun(TypedDict, total=False):
    """One engine's part of a check, as check_run collects it before it goes into the report."""

    results: list[CheckRow]
    identity: BrowserIdentity
    plan: Plan | None
    stopped: str | None  # why the page stopped short (a time limit)
    interrupted: bool
    schema: str
    schema_version: int
    created: str
    tolerances: dict[str, JsonObject]
