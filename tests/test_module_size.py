"""No module of the package over MAX_LINES lines (issue 45): a module that grows past it is split by job, into
modules whose names say the job, not allowed to grow."""

from __future__ import annotations

from pathlib import Path

import onnxport

PACKAGE = Path(onnxport.__file__).resolve().parent
MAX_LINES = 400


def line_counts() -> dict[str, int]:
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_no_module_is_over_the_limit():
    over = {name: count for name, count in line_counts().items() if count > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split each by job): " + ", ".join(
        f"server/onnxport/{name} ({count})" for name, count in over.items()
    )
