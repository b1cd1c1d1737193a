"""The check's rows on the terminal as they finish (stderr), with where the engine is: row N of M, the time it
has taken and an estimate of the time left, on each row's line and, on a terminal, in a progress bar.

A check of real models can run for many minutes; without this it printed nothing until the end, and then only
how many rows there were.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO, cast

from tqdm import tqdm

from onnxport.check.report_types import BrowserIdentity, CheckRow, WebGpuScope
from onnxport.check.time_left import TimeLeft
from onnxport.json_boundary import JsonObject

BAR_FORMAT = "{desc}: row {n_fmt} of {total_fmt} |{bar}| {elapsed} elapsed{postfix}"  # tqdm puts ", " before a postfix
# Rows of the check's own (the server's source rows, the pipelines', an engine that could not start): not the page's.
NOT_PAGE_ROWS = ("source", "server", "preprocessing", "answers", "-")


class RowStream:
    def __init__(self, *, enabled: bool = True, file: TextIO | None = None) -> None:
        self.enabled, self.file = enabled, file or sys.stderr
        self._bar: tqdm | None = None
        self._total = 0
        self._started = 0.0
        self._last = 0.0
        self._left: TimeLeft | None = None

    def say(self, line: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(line, file=self.file)  # above the bar, which redraws below
        else:
            print(line, file=self.file, flush=True)

    def start(
        self,
        engine: str,
        version: str,
        total: int,
        identity: JsonObject,
        runtimes: list[str],
        plan: JsonObject | None = None,
        position: str = "",
    ) -> None:
        """An engine's page started: `total` rows planned, `plan` (the page's) names each row's runtime."""
        self.close()
        self.say(f"{engine} {version}: {total} rows ({', '.join(runtimes)}){f', {position}' if position else ''}")
        if "webgpu" in runtimes:
            self.say(f"  {webgpu_note(cast(BrowserIdentity, identity), (plan or {}).get('webgpu'))}")
        self._total, self._started = total, time.monotonic()
        self._last = self._started
        self._left = TimeLeft([row["runtime"] for row in (plan or {}).get("rows") or []])
        if self.enabled:
            # disable=None: no bar when stderr is not a terminal (CI logs keep the row lines, which say as much)
            self._bar = tqdm(
                total=total,
                desc=engine,
                unit="row",
                file=self.file,
                disable=None,
                leave=False,
                bar_format=BAR_FORMAT,
                postfix="time left not known yet",
            )

    def row(self, row: CheckRow) -> None:
        if self._left is None or row.get("runtime") in NOT_PAGE_ROWS:
            self.say(row_line(row))
            return
        now = time.monotonic()
        # The page's own time for the row; the time since the last row for a page that does not say.
        seconds = row["row_ms"] / 1000 if isinstance(row.get("row_ms"), (int, float)) else now - self._last
        self._last = now
        self._left.finished(row["runtime"], seconds)
        estimate = self.estimate()
        if self._bar is not None:  # first, so the bar redrawn under the row's line counts it
            self._bar.set_postfix_str(estimate, refresh=False)
            self._bar.update(1)
        self.say(
            f"{row_line(row)}  (row {self._left.done} of {self._total}, "
            f"{tqdm.format_interval(now - self._started)} elapsed, {estimate})"
        )

    def estimate(self) -> str:
        """`about 02:10 left` for the engine's rows not read yet."""
        assert self._left is not None
        left = self._left.seconds()
        if self._left.done >= self._total:
            return "no rows left"
        if left is None or not self._left.runtimes:
            return "time left not known yet"
        return f"about {tqdm.format_interval(left)} left"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._left = None


def webgpu_note(identity: BrowserIdentity, scope: WebGpuScope | None = None) -> str:
    """What the engine's WebGPU rows will be, in one line: none (and why), one per model (a software adapter, by
    default), all of them on a software adapter (slow), or on a GPU."""
    adapter = identity.get("adapter")
    if not identity.get("webgpu") or not adapter:
        return "no WebGPU adapter, so its webgpu rows are skipped"
    if adapter.get("fallback"):
        name = adapter.get("architecture") or adapter.get("description") or "unnamed"
        if scope and scope.get("scope") == "one per model":
            chosen = ", ".join(f"{model} {variant}" for model, variant in (scope.get("chosen") or {}).items())
            return (
                f"WebGPU adapter is software ({name}): one webgpu row per model ({chosen or 'none'}), "
                f"{scope.get('left_out', 0)} left out; --full-webgpu runs them all (up to a minute each)"
            )
        # Said before the rows start: 100 times slower than wasm here, a large model's row takes a minute.
        return (
            f"WebGPU adapter is software ({name}), --full-webgpu: every webgpu row runs on the first "
            "--webgpu-rows inputs of each batch and takes up to a minute on a large model"
        )
    return f"WebGPU adapter: {adapter.get('vendor') or '?'} {adapter.get('architecture') or ''}".rstrip()


def row_line(row: CheckRow) -> str:
    where = row.get("browser") or "server"
    form = f" ({row['form']} form)" if row.get("form") else ""
    warm = (row.get("timings") or {}).get("warm_run_ms")
    figures = f", warm {warm:.1f} ms" if isinstance(warm, (int, float)) else ""
    reason = f": {row['reason']}" if row.get("reason") and row.get("status") != "pass" else ""
    variant = row.get("label") or row["variant"]  # what people are shown: "original (int8)" for an int8 original
    return f"  [{where}] {row['model']} {variant}{form} {row['runtime']}: {row['status']}{figures}{reason}"[:240]
