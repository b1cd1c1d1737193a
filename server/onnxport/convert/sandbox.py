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
import gc
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
from pathlib import Path
from typing import Any, Callable, TypeVar

from onnxport.errors import BuildError, OnnxportError, UsageError, one_line

T = TypeVar("T")

# Signals in which native code died on its own, which only a file can have caused here: the file's fault (exit 2).
CRASHES = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL}
CPU_GRACE = 5  # seconds between SIGXCPU (the soft limit) and SIGKILL (the hard one)
WALL_GRACE = 10.0  # seconds past the wall-time limit before the parent kills a child stuck in native code
SAID_KEPT = 8192  # bytes of native code's output the parent keeps (the end of it)
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


def run_limited(
    work: Callable[[Callable[[str], None]], T],
    limits: Limits,
    label: str,
    after_failure: Callable[[], None] = lambda: None,
    close_in_child: Path | None = None,
) -> T:
    """work(reached) in a child under `limits`: its result, or its exception raised here. `reached(step)` tells
    the parent what the child is doing. A child killed by a signal or stopped by a limit becomes an OnnxportError
    naming `label`, the limit and the step (a crash of native code: UsageError, exit 2); after any failure
    `after_failure` runs here (the repository's leftovers are cleared: the child cannot, once dead). The child
    first closes its copies of the descriptors open on `close_in_child` (a lock this process holds: a flock is
    held while any copy is open, so a child that kept one would hold it past this process's death).

    What native code writes to the child's stderr (file descriptor 2: "terminate called..." before an abort) is
    held back: printed after a success, the last of it quoted in the one line of a death, dropped after an error
    the child reported in its own words. Python's own sys.stderr (progress bars) goes straight through."""
    messages, said = os.pipe(), os.pipe()
    # Garbage that holds native state (an onnxruntime session an earlier import left in a cycle) is freed here,
    # where its library's threads exist; in the child its destructor would wait for threads a fork did not copy.
    gc.collect()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(messages[0])
        os.close(said[0])
        _child(work, limits, messages[1], said[1], close_in_child)
    os.close(messages[1])
    os.close(said[1])
    ended = _wait(pid, messages[0], said[0], limits)
    if ended.outcome is not None and ended.outcome[0] == "result":
        if ended.said:
            sys.stderr.write(ended.said.decode(errors="replace"))
        return ended.outcome[1]
    try:
        after_failure()
    except OnnxportError:
        pass  # another writer holds the repository: it clears what the child left as it starts
    raise _failure(ended, limits, label)


def _child(
    work: Callable[[Callable[[str], None]], Any], limits: Limits, writing: int, said: int, close: Path | None
) -> None:
    code = 0
    gc.freeze()  # what the parent had is the parent's to free (see run_limited); the child never collects it
    try:
        _die_with_parent()
        if close is not None:
            _close_copies(close)
        _keep_python_stderr()
        os.dup2(said, 2)
        os.close(said)
        _cap_arenas()
        _one_openmp_thread()
        if limits.memory:
            _lower(resource.RLIMIT_AS, limits.memory, limits.memory)
        if limits.cpu:
            used = resource.getrusage(resource.RUSAGE_SELF)  # a fork inherits its parent's CPU time
            soft = int(used.ru_utime + used.ru_stime + limits.cpu + 0.999)
            _lower(resource.RLIMIT_CPU, soft, soft + CPU_GRACE)
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


def _close_copies(path: Path) -> None:
    """Close the descriptors this process has open on `path` (Linux's /proc; elsewhere nothing is closed)."""
    target = os.path.realpath(path)
    folder = "/proc/self/fd"
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        try:
            if os.readlink(f"{folder}/{name}") == target:
                os.close(int(name))
        except OSError:
            pass  # closed meanwhile (the listing's own descriptor)


def _keep_python_stderr() -> None:
    """Python's sys.stderr, when it is file descriptor 2, on a copy of it: what Python prints (progress bars)
    still reaches the terminal once descriptor 2 is the pipe that holds native code's output back."""
    try:
        if sys.stderr.fileno() != 2:
            return
    except (AttributeError, OSError, ValueError):
        return  # not a file (a test's capture): native output never reached it anyway
    sys.stderr.flush()
    sys.stderr = open(os.dup(2), "w", buffering=1, encoding=sys.stderr.encoding, errors=sys.stderr.errors)


def _lower(kind: int, soft: int, hard: int) -> None:
    """Set a limit, never above the one the process already has (a shell's ulimit, a container's)."""
    _, current = resource.getrlimit(kind)
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(kind, (soft, hard))


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


def _one_openmp_thread() -> None:
    """A fork of a process whose OpenMP runtime has run a parallel region (LightGBM trained in a notebook or a
    test, then `onnxport import` called in the same process) deadlocks at its next one: GNU OpenMP's pool threads
    are not in the child. A region of one thread never uses the pool. The command line has loaded no OpenMP when
    it forks, so there the native parsers keep every core."""
    from threadpoolctl import threadpool_info, threadpool_limits

    if not any(library["user_api"] == "openmp" for library in threadpool_info()):
        return
    threadpool_limits(1, user_api="openmp")
    lightgbm = sys.modules.get("lightgbm")
    set_max = getattr(getattr(getattr(lightgbm, "basic", None), "_LIB", None), "LGBM_SetMaxThreads", None)
    if set_max is not None:  # its thread count, once a training set it, overrides OpenMP's (lightgbm >= 4.6)
        set_max(ctypes.c_int(1))


def _send(writing: int, message: tuple[str, Any]) -> None:
    data = pickle.dumps(message)
    os.write(writing, struct.pack("!Q", len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(writing, view) :]


def _portable(exc: BaseException) -> BaseException:
    """exc as the parent can unpickle it, its traceback kept as a note (shown if nothing catches it there)."""
    if not isinstance(exc, (OnnxportError, KeyboardInterrupt)):
        exc.add_note("In the import's child process:\n" + "".join(traceback.format_exception(exc)).rstrip())
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # an exception that does not survive pickling goes as its text
        return BuildError(f"{type(exc).__name__}: {one_line(str(exc))}")


@dataclass
class _Ended:
    """How the child ended: its last step, ("result" | "error" | "stuck", value), the end of what native code
    printed, its wait status and the CPU seconds it used."""

    step: str | None = None
    outcome: tuple[str, Any] | None = None
    said: bytes = b""
    status: int = 0
    cpu: float = 0.0


def _wait(pid: int, messages: int, said: int, limits: Limits) -> _Ended:
    """Read the child's messages and output until it exits. Ctrl-C here is passed on to the child (which stops as
    an import stops: its transaction cleans up)."""
    deadline = time.monotonic() + limits.wall + WALL_GRACE if limits.wall else None
    ended, buffer, printed = _Ended(), b"", b""
    open_fds = [messages, said]
    while open_fds:
        try:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select(open_fds, [], [], timeout)
        except KeyboardInterrupt:
            _interrupt(pid)
            continue
        if not ready:  # stuck past the wall-time limit in a call that never returns to Python
            os.kill(pid, signal.SIGKILL)
            ended.outcome = ("stuck", None)
            break
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.remove(fd)
            elif fd == said:
                printed = (printed + chunk)[-SAID_KEPT:]
            else:
                buffer += chunk
                while len(buffer) >= 8 and len(buffer) >= 8 + struct.unpack("!Q", buffer[:8])[0]:
                    size = struct.unpack("!Q", buffer[:8])[0]
                    kind, value = pickle.loads(buffer[8 : 8 + size])
                    buffer = buffer[8 + size :]
                    if kind == "step":
                        ended.step = value
                    else:
                        ended.outcome = (kind, value)
    for fd in (messages, said):
        os.close(fd)
    ended.said = printed
    while True:
        try:
            _, ended.status, usage = os.wait4(pid, 0)
            ended.cpu = usage.ru_utime + usage.ru_stime
            return ended
        except KeyboardInterrupt:
            _interrupt(pid)


def _interrupt(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        pass


def _failure(ended: _Ended, limits: Limits, label: str) -> BaseException:
    """The one error for a child that did not return a result."""
    where = f"at step {ended.step!r}" if ended.step else "before its first step"
    last_words = _last_line(ended.said)
    if ended.outcome is not None and ended.outcome[0] == "stuck":
        return BuildError(
            f"{label}: not done within the time limit of {limits.wall:g} s ({limits.wall_option}); "
            f"stopped {where}, stuck in native code; nothing was written"
        )
    if ended.outcome is not None:  # the child's own exception; a failed allocation is the memory limit's
        exc = ended.outcome[1]
        if limits.memory and _out_of_memory(exc):
            return BuildError(
                f"{label}: reached the {_size(limits.memory)} address-space limit "
                f"({limits.memory_option}) {where}: {_shortened(str(exc))}; nothing was written"
            )
        return exc
    if not os.WIFSIGNALED(ended.status):
        return BuildError(
            f"{label}: the import's process ended with exit status "
            f"{os.waitstatus_to_exitcode(ended.status)} {where}, without a result; nothing was written"
        )
    number = os.WTERMSIG(ended.status)
    name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"
    said = f" (it printed: {last_words!r})" if last_words else ""
    if limits.cpu and (number == signal.SIGXCPU or (number == signal.SIGKILL and ended.cpu >= limits.cpu)):
        return BuildError(
            f"{label}: used up the CPU-time limit of {limits.cpu:g} s ({limits.cpu_option}) {where} "
            f"({ended.cpu:.0f} CPU-s, every thread together); nothing was written"
        )
    if limits.memory and any(word in last_words.lower() for word in _OUT_OF_MEMORY):  # bad_alloc, then abort
        return BuildError(
            f"{label}: reached the {_size(limits.memory)} address-space limit ({limits.memory_option}) "
            f"{where}: native code died of it with {name}{said}; nothing was written"
        )
    if number in CRASHES:
        return UsageError(f"{label}: native code crashed on this file with {name} {where}{said}; nothing was written")
    return BuildError(
        f"{label}: the import's process was killed by {name} {where} (by the system's out-of-memory "
        f"killer, or by someone){said}; nothing was written"
    )


def _out_of_memory(exc: BaseException | None) -> bool:
    """A failed allocation anywhere in the chain: MemoryError, or a library's words for std::bad_alloc."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, MemoryError) or any(word in str(exc).lower() for word in _OUT_OF_MEMORY):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _last_line(said: bytes) -> str:
    lines = [line for line in said.decode(errors="replace").splitlines() if line.strip()]
    return _shortened(lines[-1]) if lines else ""


def _shortened(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= 200 else text[:197] + "..."


def _size(count: int) -> str:
    """Bytes as the settings say them: 6 GiB, 512 MiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"
