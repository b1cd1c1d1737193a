"""The one place onnxruntime sessions are configured: providers, threads, logging and profiling.

Every session the package makes comes from here: create_session for the sessions that run (the
server, the build's checks, bench, the probes), and two build-time sessions that never run a
request: check_loads (does this model load?) and save_optimized (the model as onnxruntime's CPU
provider optimizes it, written to a file: the forms of convert/forms/, convert/int8/prep.py's
pre-processing). Those two let onnxruntime's own error through, where create_session names the
model in a ModelFileError: their callers record the error as the reason a step or a form was
skipped, under the step's name.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import onnxruntime as ort

from onnxport import runtime_messages
from onnxport.errors import ModelFileError, one_line

Feeds = dict[str, np.ndarray]
CPU = "CPUExecutionProvider"
VERSION = ort.__version__


@dataclass(frozen=True)
class SessionSettings:
    """How a serving session runs (create_session's keywords of the same names): the server's settings
    intra_op_threads, inter_op_threads, providers and intra_op_spinning, as its SessionPool applies them, so
    that every session of one server, V2 model or generation decoder, runs the same way."""

    threads: int = 0
    inter_op_threads: int = 0
    providers: tuple[str, ...] = (CPU,)
    spinning: bool = True


def serving_session(model: bytes | Path, how: SessionSettings, *, label: str = "model") -> ort.InferenceSession:
    """create_session as `how` says: the one way a server's sessions (V2 models, generation's decoders) are made."""
    return create_session(
        model,
        label=label,
        threads=how.threads,
        inter_op_threads=how.inter_op_threads,
        providers=how.providers,
        spinning=how.spinning,
    )


def create_session(
    model: bytes | Path,
    *,
    label: str = "model",
    threads: int = 0,
    inter_op_threads: int = 0,
    providers: Sequence[str] = (CPU,),
    profile_prefix: str | None = None,
    spinning: bool = True,
    in_node_order: bool = False,
) -> ort.InferenceSession:
    """A session from serialized bytes or a file; a load failure names the model.

    threads/inter_op_threads 0 let onnxruntime choose; profile_prefix turns its profiler on;
    spinning False makes idle intra-op threads sleep rather than spin (cores shared with other work);
    in_node_order runs ready nodes in the graph's node order (onnxruntime's default order walks back
    from the outputs: a probe that reduces every value right after its producer would otherwise hold
    every value until the end of the run).
    """
    options = _options()
    if in_node_order:
        options.execution_order = ort.ExecutionOrder.PRIORITY_BASED
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = inter_op_threads
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    source = str(model) if isinstance(model, Path) else model
    try:
        return ort.InferenceSession(source, options, providers=list(providers))
    except Exception as exc:  # onnxruntime raises several unrelated types
        detail = _message(exc)
        raise LoadError(
            f"{label}: onnxruntime {ort.__version__} cannot load it: {detail}", detail, runtime_messages.read(str(exc))
        ) from exc


# The optimization levels a build saves a model at, by the names the manifest records (docs/reference/manifest.md,
# "forms").
OPTIMIZATION_LEVELS = {
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
}


def check_loads(model: bytes) -> None:
    """Load `model` in a CPU session and drop it; onnxruntime's own error if it cannot."""
    ort.InferenceSession(model, _options(), providers=[CPU])


def save_optimized(model: bytes, target: Path, level: str, *, ort_format: bool = False) -> None:
    """Write `model` to `target` as onnxruntime's CPU provider optimizes it at `level` ("basic" or
    "extended"; its optimized_model_filepath), in the ORT format with `ort_format`; onnxruntime's own
    error if it cannot. The CPU provider: its optimizations are the ones a browser's WebAssembly
    build would redo, and what quant_pre_process runs before quantizing."""
    options = _options()
    options.graph_optimization_level = OPTIMIZATION_LEVELS[level]
    options.optimized_model_filepath = str(target)
    if ort_format:
        options.add_session_config_entry("session.save_model_format", "ORT")
    ort.InferenceSession(model, options, providers=[CPU])


def run(session: ort.InferenceSession, feeds: Feeds, *, label: str = "model") -> dict[str, np.ndarray]:
    """All outputs by name, for feeds restricted to the session's inputs."""
    wanted = {i.name for i in session.get_inputs()}
    return run_outputs(
        session, [o.name for o in session.get_outputs()], {k: v for k, v in feeds.items() if k in wanted}, label=label
    )


@functools.cache
def shrinking() -> ort.RunOptions:
    """Run options that give the CPU arena's free chunks back after the run. A server's arena otherwise keeps
    its largest request's peak for good (10,000 texts to minilm kept 1 GB); on minilm the shrink cost nothing
    measurable (runs of 1 and 16 rows, ratio 0.90-0.93 with it)."""
    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def run_outputs(
    session: ort.InferenceSession, names: list[str], feeds: Feeds, *, label: str, options: ort.RunOptions | None = None
) -> dict[str, np.ndarray]:
    """Chosen outputs by name; a run failure names the model and what onnxruntime said."""
    try:
        return dict(zip(names, session.run(names, feeds, options)))
    except Exception as exc:
        detail = _message(exc)
        raise RunError(
            f"{label}: onnxruntime failed to run it: {detail}",
            detail,
            refusal=runtime_messages.read(str(exc)),
            invalid_argument=type(exc).__name__ == "InvalidArgument",
            out_of_memory="Failed to allocate memory" in detail or "bad_alloc" in detail,
        ) from exc


def usable_providers(wanted: Sequence[str]) -> list[str]:
    """The wanted providers this onnxruntime build has, in order, CPU always last."""
    available = set(ort.get_available_providers())
    chosen = [p for p in wanted if p in available and p != CPU]
    return [*chosen, CPU]


class LoadError(ModelFileError):
    """onnxruntime would not load a model: detail is its whole message on one line, refusal what it names
    (the node, its operator, the reason on one line)."""

    def __init__(self, message: str, detail: str, refusal: runtime_messages.Refusal):
        super().__init__(message)
        self.detail = detail
        self.refusal = refusal


class RunError(ModelFileError):
    """onnxruntime refused to run a request that passed our checks.

    detail: onnxruntime's whole message on one line; refusal: the node, operator and reason it names.
    invalid_argument: onnxruntime's INVALID_ARGUMENT, a verdict on the inputs (an index past a
    table, dimensions that do not fit together), not on the model or the machine.
    out_of_memory: an allocation failed: inputs too large for this machine's memory.
    """

    def __init__(
        self,
        message: str,
        detail: str = "",
        *,
        refusal: runtime_messages.Refusal | None = None,
        invalid_argument: bool = False,
        out_of_memory: bool = False,
    ):
        super().__init__(message)
        self.detail = detail or message
        self.refusal = refusal or runtime_messages.read(self.detail)
        self.invalid_argument = invalid_argument
        self.out_of_memory = out_of_memory


def _options() -> ort.SessionOptions:
    options = ort.SessionOptions()
    # Fatal only. Warnings (unused initializers) are noise, and a failed run's error reaches its caller
    # in the exception: the server's request line (serving/http/request_log.py) carries it, the CLI prints it.
    options.log_severity_level = 4
    return options


def _message(exc: BaseException) -> str:
    """The whole message on one line (errors.one_line): never its first line alone."""
    return one_line(str(exc)) or type(exc).__name__
