"""Stop strings over text that comes in pieces: what may be given now, held back while it could start one.

A stop string may span tokens ("\\n\\nUser:" in three), so text that ends with the start of a stop string is held
until the next text tells whether the stop string follows. Once one is found, the text before it is given and
nothing after it ever is.
"""

from __future__ import annotations

from typing import Sequence


class StopText:
    def __init__(self, stops: Sequence[str]):
        self.stops = tuple(s for s in stops if s)
        self.stopped = False
        self._pending = ""

    def push(self, text: str) -> tuple[str, bool]:
        """The text that may be given now, and whether a stop string was found (the text is then what came
        before it)."""
        if self.stopped:
            return "", True
        pending = self._pending + text
        found = [i for i in (pending.find(s) for s in self.stops) if i >= 0]
        if found:
            self.stopped = True
            self._pending = ""
            return pending[: min(found)], True
        keep = self._held_length(pending)
        self._pending = pending[len(pending) - keep :]
        return pending[: len(pending) - keep], False

    def flush(self) -> str:
        """The held text, given at the end: no stop string followed it."""
        held, self._pending = self._pending, ""
        return held

    def _held_length(self, text: str) -> int:
        """The longest end of text that is the start of a stop string."""
        longest = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:size]):
                    longest = size
                    break
        return longest
