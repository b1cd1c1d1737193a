"""Run a block of import work in a forked child process, under an address-space and a CPU-time limit.

Why a process: an import hands a user's file to native code (LightGBM's and XGBoost's loaders, onnx shape
inference, onnxruntime's sessions for golden data and the fp16/int8 passes). A crafted file can crash it
(SIGSEGV, SIGABRT: no Python code runs after that) or make it allocate until the machine runs out. In a child,
a crash kills the child only; the parent is left to say in one line what happened, and to clear what the child
staged. Why rlimits: RLIMIT_AS turns an allocation past the limit into a failed allocation (MemoryError,
std::bad_alloc) instead of the machine's memory, RLIMIT_CPU stops a native loop that never returns to Python
(SIGXCPU, then SIGKILL a few seconds later).

The child is a fork: it has the parent's modules and state already (nothing to pickle going in, and what a test
changed in-process holds in the child too). It sends back, through a pipe, the steps it reaches (so that a crash
can say where), then its result or its exception, which the parent returns or raises as if the work had run in
it. Output the child prints goes to the same stdout and stderr (progress bars); the parent prints the rest.

RLIMIT_AS counts address space mapped, not memory touched: onnxruntime's and numpy's thread pools and glibc's
per-thread malloc arenas map far more than they use, so the child caps glibc's arenas (M_ARENA_MAX) to keep
what it maps close to what it uses, on any number of cores.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import resource
import select
import signal
import struct
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from onnxport.errors import BuildError, OnnxportError, UsageError, one_line

T = TypeVar("T")

# Signals in which native code died on its own, which only a file can have caused here: the file's fault (exit 2).
CRASHES = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL}
CPU_GRACE = 5  # seconds between SIGXCPU (the soft limit) and SIGKILL (the hard one)
WALL_GRACE = 10.0  # seconds past the wall-time limit before the parent kills a child stuck in native code
ARENAS = 4  # glibc malloc arenas in the child (its default is 8 per core, 64 MiB of address space each)
_M_ARENA_MAX = -8  # mallopt's parameter number (glibc malloc.h)
_PR_SET_PDEATHSIG = 1  # prctl's option number (linux/prctl.h)
# What a failed allocation says once the library in which it failed has turned it into its own exception.
_OUT_OF_MEMORY = ("bad_alloc", "failed to allocate", "cannot allocate memory", "out of memory", "memoryerror")


@dataclass(frozen=True)
class Limits:
    """The child's limits and how the user sets each (named in the messages); None: no limit."""
    memory: int | None  # bytes of address space
    cpu: float | None  # CPU seconds, every thread together
    wall: float | None  # seconds; the work enforces it itself, the parent only stops a child stuck past it
    memory_option: str = "setting import_memory_limit, --memory-limit"
    cpu_option: str = "setting import_cpu_limit, --cpu-limit"
    wall_option: str = "setting import_time_limit, --time-limit"


def run_limited(work: Callable[[Callable[[str], None]], T], limits: Limits, label: str,
                after_failure: Callable[[], None] = lambda: None) -> T:
    """work(reached) in a child under `limits`: its result, or its exception raised here. `reached(step)` tells
    the parent what the child is doing. A child killed by a signal or stopped by a limit becomes an OnnxportError
    naming `label`, the limit and the step (a crash of native code: UsageError, exit 2); after any failure
    `after_failure` runs here (the repository's leftovers are cleared: the child cannot, once dead)."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(reading)
        _child(work, limits, writing)
    os.close(writing)
    step, outcome, status, cpu = _wait(pid, reading, limits)
    if outcome is not None and outcome[0] == "result":
        return outcome[1]
    try:
        after_failure()
    except OnnxportError:
        pass  # another writer holds the repository: it clears what the child left as it starts
    if outcome is not None and outcome[0] == "stuck":
        raise BuildError(f"{label}: not done within the time limit of {limits.wall:g} s ({limits.wall_option}); "
                         f"stopped {_where(step)}, stuck in native code; nothing was written")
    if outcome is not None:
        raise _translated(outcome[1], limits, label, step)
    raise _death(status, cpu, limits, label, step)


def _child(work: Callable[[Callable[[str], None]], Any], limits: Limits, writing: int) -> None:
    code = 0
    try:
        _die_with_parent()
        _cap_arenas()
        if limits.memory:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
        if limits.cpu:
            used = resource.getrusage(resource.RUSAGE_SELF)  # a fork inherits its parent's CPU time
            soft = int(used.ru_utime + used.ru_stime + limits.cpu + 0.999)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + CPU_GRACE))
        result = work(lambda step: _send(writing, ("step", step)))
        _send(writing, ("result", result))
    except BaseException as exc:  # every exception goes to the parent, Ctrl-C's too
        _send(writing, ("error", _portable(exc)))
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed stream cannot stop the exit
                code = 1
        os._exit(code)  # no atexit handlers, no pytest teardown: they are the parent's


def _die_with_parent() -> None:
    """SIGKILL the child when the parent dies (kill -9 of `onnxport import`): it must not go on writing."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the child runs on until done, then its own lock and transaction still hold
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _cap_arenas() -> None:
    try:
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, ARENAS)
    except (OSError, AttributeError):
        pass  # not glibc: its allocator has its own rules


def _send(writing: int, message: tuple[str, Any]) -> None:
    data = pickle.dumps(message)
    os.write(writing, struct.pack("!Q", len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(writing, view):]


def _portable(exc: BaseException) -> BaseException:
    """exc as the parent can unpickle it, its traceback kept as a note (shown if nothing catches it there)."""
    if not isinstance(exc, (OnnxportError, KeyboardInterrupt)):
        exc.add_note("In the import's child process:\n" + "".join(traceback.format_exception(exc)).rstrip())
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # an exception that does not survive pickling goes as its text
        return BuildError(f"{type(exc).__name__}: {one_line(str(exc))}")


def _wait(pid: int, reading: int, limits: Limits) -> tuple[str | None, tuple[str, Any] | None, int, float]:
    """Read the child's messages until it exits: (last step, result or error, wait status, CPU seconds).
    Ctrl-C here is passed on to the child (which stops as an import stops: its transaction cleans up)."""
    deadline = time.monotonic() + limits.wall + WALL_GRACE if limits.wall else None
    step, outcome, buffer = None, None, b""
    with os.fdopen(reading, "rb", buffering=0) as pipe:
        while True:
            try:
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select([pipe], [], [], timeout)
                if not ready:  # stuck past the wall-time limit in a call that never returns to Python
                    os.kill(pid, signal.SIGKILL)
                    outcome = ("stuck", None)
                    break
                chunk = pipe.read(1 << 16)
            except KeyboardInterrupt:
                _interrupt(pid)
                continue
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= 8 and len(buffer) >= 8 + struct.unpack("!Q", buffer[:8])[0]:
                size = struct.unpack("!Q", buffer[:8])[0]
                kind, value = pickle.loads(buffer[8:8 + size])
                buffer = buffer[8 + size:]
                if kind == "step":
                    step = value
                else:
                    outcome = (kind, value)
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            return step, outcome, status, usage.ru_utime + usage.ru_stime
        except KeyboardInterrupt:
            _interrupt(pid)


def _interrupt(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        pass


def _where(step: str | None) -> str:
    return f"at step {step!r}" if step else "before its first step"


def _translated(exc: BaseException, limits: Limits, label: str, step: str | None) -> BaseException:
    """The child's exception, or for a failed allocation under the memory limit, the limit's one line."""
    if limits.memory and _out_of_memory(exc):
        return BuildError(f"{label}: reached the {_size(limits.memory)} address-space limit ({limits.memory_option}) "
                          f"{_where(step)}: {_cause(exc)}; nothing was written")
    return exc


def _out_of_memory(exc: BaseException | None) -> bool:
    """A failed allocation anywhere in the chain: MemoryError, or a library's words for std::bad_alloc."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, MemoryError) or any(word in str(exc).lower() for word in _OUT_OF_MEMORY):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _cause(exc: BaseException) -> str:
    text = one_line(str(exc)) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _death(status: int, cpu: float, limits: Limits, label: str, step: str | None) -> OnnxportError:
    """The one line for a child that died without a word: by a signal, or an exit before it could send one."""
    if not os.WIFSIGNALED(status):
        return BuildError(f"{label}: the import's process ended with exit status {os.waitstatus_to_exitcode(status)} "
                          f"{_where(step)}, without a result; nothing was written")
    number = os.WTERMSIG(status)
    name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"
    if limits.cpu and (number == signal.SIGXCPU or (number == signal.SIGKILL and cpu >= limits.cpu)):
        return BuildError(f"{label}: used up the CPU-time limit of {limits.cpu:g} s ({limits.cpu_option}) "
                          f"{_where(step)} ({cpu:.0f} CPU-s, every thread together); nothing was written")
    if number in CRASHES:
        return UsageError(f"{label}: native code crashed on this file with {name} {_where(step)}; "
                          "nothing was written")
    return BuildError(f"{label}: the import's process was killed by {name} {_where(step)} (by the system's "
                      "out-of-memory killer, or by someone); nothing was written")


def _size(count: int) -> str:
    """Bytes as the settings say them: 6 GiB, 512 MiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"
