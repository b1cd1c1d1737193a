"""The check's rows on the terminal as they finish (stderr), with a progress bar per engine.

A check of real models can run for many minutes; without this it printed nothing until the end.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm import tqdm


class RowStream:
    def __init__(self, *, enabled: bool = True, file: TextIO | None = None) -> None:
        self.enabled, self.file = enabled, file or sys.stderr
        self._bar: tqdm | None = None

    def say(self, line: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(line, file=self.file)  # above the bar, which redraws below
        else:
            print(line, file=self.file, flush=True)

    def start(self, engine: str, version: str, total: int, identity: dict[str, Any], runtimes: list[str]) -> None:
        self.close()
        self.say(f"{engine} {version}: {total} rows ({', '.join(runtimes)})")
        if "webgpu" in runtimes:
            self.say(f"  {webgpu_note(identity)}")
        if self.enabled:
            # disable=None: no bar when stderr is not a terminal (CI logs keep the row lines only)
            self._bar = tqdm(total=total, desc=engine, unit="row", file=self.file, disable=None, leave=False)

    def row(self, row: dict[str, Any]) -> None:
        self.say(row_line(row))
        if self._bar is not None and row.get("runtime") not in ("source", "preprocessing", "answers", "-"):
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def webgpu_note(identity: dict[str, Any]) -> str:
    """What the engine's WebGPU rows will be: none (and why), slow (a software adapter), or on a GPU."""
    adapter = identity.get("adapter")
    if not identity.get("webgpu") or not adapter:
        return "no WebGPU adapter, so its webgpu rows are skipped"
    if adapter.get("fallback"):
        name = adapter.get("architecture") or adapter.get("description") or "unnamed"
        # Said before the rows start: 100 times slower than wasm here, a large model's row takes minutes.
        return (f"WebGPU adapter is software ({name}): webgpu rows run only the first --webgpu-rows inputs of each "
                "batch and still take up to minutes each on large models; --runtimes wasm,wasm-1t leaves them out")
    return f"WebGPU adapter: {adapter.get('vendor') or '?'} {adapter.get('architecture') or ''}".rstrip()


def row_line(row: dict[str, Any]) -> str:
    where = row.get("browser") or "server"
    form = f" ({row['form']} form)" if row.get("form") else ""
    warm = (row.get("timings") or {}).get("warm_run_ms")
    figures = f", warm {warm:.1f} ms" if isinstance(warm, (int, float)) else ""
    reason = f": {row['reason']}" if row.get("reason") and row.get("status") != "pass" else ""
    variant = row.get("label") or row["variant"]  # what people are shown: "original (int8)" for an int8 original
    return f"  [{where}] {row['model']} {variant}{form} {row['runtime']}: {row['status']}{figures}{reason}"[:240]
