"""How long the rest of an engine's rows will take, from the rows it finished.

Rows differ by runtime far more than by anything else (a WebGPU row on a software adapter took 16 to 45 s where a
WebAssembly row of the same model took 1 to 4 s), so each row still to run is counted at the mean time of the
finished rows of its runtime, and a runtime none has finished yet at the mean of all finished rows.
"""

from __future__ import annotations

from collections import defaultdict


class TimeLeft:
    def __init__(self, runtimes: list[str]) -> None:
        self.runtimes = list(runtimes)  # each planned row's runtime, in run order
        self.done = 0
        self._seconds: dict[str, list[float]] = defaultdict(list)

    def finished(self, runtime: str, seconds: float) -> None:
        self.done += 1
        self._seconds[runtime].append(max(0.0, seconds))

    def seconds(self) -> float | None:
        """Seconds left, or None before any row finished (nothing to go by)."""
        times = [s for group in self._seconds.values() for s in group]
        if not times:
            return None
        overall = sum(times) / len(times)
        means = {runtime: sum(group) / len(group) for runtime, group in self._seconds.items()}
        return sum(means.get(runtime, overall) for runtime in self.runtimes[self.done :])
