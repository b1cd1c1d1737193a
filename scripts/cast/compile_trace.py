"""Which WebAssembly functions V8 compiles because a Cast ran (docs/cast.md).

    .venv/bin/python scripts/cast/compile_trace.py [--out /tmp/onnxport-cast]

Runs scripts/cast/first_run.py twice with Chromium's --js-flags=--trace-wasm-compilation-times (V8 prints
one line per compiled function; Playwright's DEBUG=pw:browser shows the browser's output): the sequence
"others_then_cast" (Identity, Add, then Cast models) and "no_cast" (Identity, Add only). The Liftoff
compilations found only in the first are the ones the Cast kernel's first call caused.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINE = re.compile(r"#(\d+) using (Liftoff|TurboFan), took (\d+) μs.*?bodysize (\d+)")


def trace(out: Path, sequence: str) -> dict[str, tuple[int, int]]:
    """{function index: (Liftoff compile μs, body bytes)} for one fresh-Chromium run of `sequence`."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "first_run.py"), "--out", str(out), "--sequences", sequence,
         "--js-flags=--trace-wasm-compilation-times"],
        env={**os.environ, "DEBUG": "pw:browser"}, capture_output=True, text=True, check=True)
    print("\n".join(line for line in proc.stdout.splitlines() if line.startswith(sequence)))
    found: dict[str, tuple[int, int]] = {}
    for m in LINE.finditer(proc.stderr):
        if m.group(2) == "Liftoff":
            found[m.group(1)] = (int(m.group(3)), int(m.group(4)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/onnxport-cast")
    args = parser.parse_args()
    out = Path(args.out)
    with_cast = trace(out, "others_then_cast")
    without = trace(out, "no_cast")
    only = sorted(((us, fn, body) for fn, (us, body) in with_cast.items() if fn not in without), reverse=True)
    total_ms = sum(u for u, _, _ in only) / 1000
    print(f"Liftoff compilations only when a Cast ran: {len(only)} functions, {total_ms:.1f} ms in all")
    for us, fn, body in only[:5]:
        print(f"  function #{fn}: {body} bytes of WebAssembly, compiled in {us / 1000:.1f} ms")


if __name__ == "__main__":
    main()
