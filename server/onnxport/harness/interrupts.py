"""Signals while a check runs: SIGTERM is a Ctrl-C (the server and browsers it started are stopped, the finished
rows kept), and a row is recorded and printed as one step, so an interrupt never lands between the two."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # only the main thread may set handlers


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Inside, SIGTERM raises KeyboardInterrupt as Ctrl-C does."""
    if not _on_main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Inside, SIGINT and SIGTERM wait: the first one is handled, by its own handler, on the way out."""
    if not _on_main_thread():
        yield
        return
    caught: list[signal.Signals] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        caught.append(signal.Signals(signum))

    previous = {signum: signal.signal(signum, hold) for signum in _SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:
            handler = previous[caught[0]]
            if callable(handler):
                handler(caught[0], None)
            elif handler != signal.SIG_IGN:
                signal.raise_signal(caught[0])  # its default action, now that it is back
