"""The command line every generator of a committed file shares: write the file, or with --check fail when the
committed one is not what the generator makes now (the tests run the check)."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(argv: list[str], out: Path, text: str, *, source: str, script: str, usage: str | None) -> int:
    if argv == ["--check"]:
        if out.read_text() != text:
            print(f"{out} differs from {source}: run python {script}", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(usage, file=sys.stderr)
        return 2
    out.write_text(text)
    return 0
