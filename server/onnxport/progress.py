"""A long job's steps on stderr: a redrawn bar on a terminal, one plain line per step anywhere else.

A tqdm bar redraws itself with carriage returns. In a log (`make run > log`, CI, a pipe) that became one line
of thousands of `\\r` updates; there, each step gets its own line with the time since the job started, which
also says where the time went.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Steps:
    """`with Steps(name, total) as steps: steps.step("export")`: a job of `total` steps named `name`.

    label is the step under way ("start" before the first), kept even when nothing is shown (`enabled=False`,
    --quiet): an error names it."""

    def __init__(self, name: str, total: int, *, enabled: bool = True, file: TextIO | None = None) -> None:
        self.name, self.total, self.label, self.done = name, total, "start", 0
        self.file = file or sys.stderr
        self.enabled = enabled
        self._started = time.perf_counter()
        self._bar = (
            tqdm(total=total, desc=name, unit="step", file=self.file, leave=False)
            if enabled and is_terminal(self.file)
            else None
        )

    def step(self, label: str) -> None:
        self.label, self.done = label, self.done + 1
        if self._bar is not None:
            self._bar.set_description(f"{self.name}: {label}")
            self._bar.update(1)
        elif self.enabled:
            self._line(f"{self.name}: {label} ({self.done}/{self.total}, {self.elapsed():.1f} s in)")

    def elapsed(self) -> float:
        return time.perf_counter() - self._started

    def close(self, *, finished: bool) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.enabled and finished:
            self._line(f"{self.name}: done in {self.elapsed():.1f} s")

    def _line(self, text: str) -> None:
        print(text, file=self.file, flush=True)

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close(finished=kind is None)
