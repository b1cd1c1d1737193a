"""bench.json's parts as types: a timing, a throughput row, a model's figures, a browser row, an engine's section,
the report (docs/reference/manifest.md, "`bench.json`", documents every key).

The browser rows arrive as the bench page wrote them (bench_page.py, a JSON boundary) and are read as BrowserRow
from there on; the page's device probe and a row's stage times stay JsonObject.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from onnxport.json_boundary import JsonObject


class Timing(TypedDict):
    median_ms: float
    p90_ms: float
    runs: int


class NativeTiming(Timing):
    threads: int


class ThroughputRow(Timing):
    """One client count's throughput on the server, with the latency timing."""

    clients: int
    requests: int  # completed
    seconds: float
    requests_per_s: float
    errors: NotRequired[list[str]]  # the first three, when some requests failed


class RayRow(TypedDict):
    engine: str  # ray
    replicas: int
    batching: str  # off or on
    throughput: list[ThroughputRow]


class RayStart(TypedDict):
    replicas: int
    seconds: float


class VariantFigures(TypedDict):
    label: NotRequired[str]  # what people are shown, only where it is not the name
    bytes: int
    size_ratio: float | None
    native: dict[str, NativeTiming]  # "1" (one thread) and "all" (every core)


class ServerFigures(TypedDict, total=False):
    round_trip: dict[str, Timing]  # json and binary requests, one client
    throughput_batching_off: list[ThroughputRow]
    throughput_batching_on: list[ThroughputRow]
    engines: list[RayRow]  # --ray-replicas


class OperatorRow(TypedDict):
    op: str
    native_ms: float
    browser_ms: float
    ratio: float | None


class ModelFigures(TypedDict):
    inputs: dict[str, list[int]]  # input name -> shape
    variants: dict[str, VariantFigures]
    server: NotRequired[ServerFigures]
    operator_profile: NotRequired[list[OperatorRow]]


class BrowserRow(TypedDict, total=False):
    """One variant (or form) in one runtime of one engine."""

    browser: str
    model: str
    variant: str
    runtime: str
    form: str | None
    bytes: int
    sha256: str
    status: str  # ok, skipped, error
    reason: str
    threads: int
    cold: JsonObject  # by stage
    cached: JsonObject
    prepared: JsonObject
    warm: Timing


class EngineSection(TypedDict):
    engine: str
    version: str | None
    device: JsonObject | None  # the page's probe
    threads: int | None
    results: list[BrowserRow]
    speed: NotRequired[JsonObject]  # harness/speed_ratio.py's, beside Chromium
    error: NotRequired[str]
    stalls: NotRequired[list[str]]
    profiles: NotRequired[dict[str, dict[str, float]]]  # model -> op -> ms; moved into operator_profile


class Machine(TypedDict):
    platform: str
    python: str
    cpu: str
    cores: int
    onnxruntime: str


class BenchReport(TypedDict):
    schema: str
    schema_version: int
    machine: Machine
    models: dict[str, ModelFigures]
    browsers: NotRequired[dict[str, EngineSection]]
    browser: NotRequired[EngineSection]
    ray_starts: NotRequired[list[RayStart]]
    recommendations: NotRequired[dict[str, dict[str, bool]]]  # dynamic_batching (and _ray): model -> batch it


class RayRun(TypedDict):
    rows: dict[str, list[RayRow]]  # model -> its rows
    starts: list[RayStart]


class GenerationRow(TypedDict):
    """One runtime's variant at one thread count: medians over the rounds (bench/generation_bench.py)."""

    runtime: str  # onnxport, or a peer's name
    variant: str
    threads: int
    prefill_ms: float
    tokens_per_s: float  # decode: the tokens after the first over their steps' time
    token_ids: list[int]  # the greedy tokens of the first round
    parted_at: int | None  # the first token (1-based) that differs from onnxport fp32's greedy path; None: none
    fp32_gap: float | None  # there, fp32's two best logits' difference (a near tie within near_tie.MARGIN)
    same_as_fp32: bool | None  # equal by the near-tie rule (generation/agreement.py); None without fp32 measured


class GenerationReport(TypedDict):
    """`onnxport bench --generation FOLDER --json PATH`."""

    schema: str  # onnxport.bench.generation
    schema_version: int
    machine: Machine
    folder: str
    prompt: str
    prompt_tokens: int
    tokens: int
    rounds: int
    rows: list[GenerationRow]
    peers: dict[str, str]  # the other runtimes measured: name -> what it is (version, its onnxruntime)
    peer_note: str  # why none was, when none was
