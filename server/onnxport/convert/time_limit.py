"""A wall-time limit on a block of build work (the import's `--time-limit`, setting import_time_limit).

A timer (SIGALRM) raises _Expired in the main thread; the block's own cleanup runs as for any error
(a transaction removes its staged files), and the limit becomes one OnnxportError naming it. _Expired
is a BaseException, so the `except Exception` that turns a converter's crash into a rejected variant
does not swallow it.

Python runs a signal handler between bytecodes: a call into onnxruntime or onnx that is running
when the time is up (a session being created) finishes first. With the import's node limit and the
variants' size rules, no such call lasts more than seconds; docs/guide/build-and-import.md says so.
Outside the main thread (signals cannot be handled there) the block runs without a limit.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

from onnxport.errors import BuildError


class _Expired(BaseException):
    pass


@contextlib.contextmanager
def time_limit(seconds: float | None, message: Callable[[], str]) -> Iterator[None]:
    """Run the block within `seconds` (None or 0: no limit), else raise BuildError(message())."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = True

    def expire(signum, frame) -> None:
        if armed:
            raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            yield
        finally:
            armed = False  # a timer firing from here on does nothing
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        raise BuildError(message()) from None
    finally:
        signal.signal(signal.SIGALRM, previous)
