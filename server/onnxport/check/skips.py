"""Rows `onnxport check` skips: a model whose tensors cannot travel (the other models go on), and the
report's line per reason saying so: a skip is not a failure, so it must not pass unseen either."""

from __future__ import annotations

import numpy as np

from onnxport.check.report_types import CheckRow
from onnxport.repository.manifest import ModelEntry


def uncarried_tensor(entry: ModelEntry) -> str | None:
    """Why the golden data of a manifest entry cannot reach a source row, or None.

    The golden-data endpoint sends each tensor as its raw little-endian bytes (onnxport.tensor_json),
    which hold numbers, never strings: a STRING input or output (numpy object) cannot be read back.
    The browser rows skip such a model for the same reason (web/app/conformance.js, uncarriedTensor).
    """
    for kind, specs in (("input", entry.get("inputs") or []), ("output", entry.get("outputs") or [])):
        for spec in specs:
            if _fixed_size(spec.get("dtype")):
                continue
            what = "a string tensor (numpy object)" if spec.get("dtype") == "object" else f"dtype {spec.get('dtype')}"
            return f"{kind} {spec.get('name')} is {what}: the golden data reaches the check as raw bytes, numeric only"
    return None


def _fixed_size(dtype: object) -> bool:
    try:
        return not np.dtype(str(dtype)).hasobject
    except TypeError:
        return False


NOT_FAILURES = ("skipped", "unsupported")  # rows the exit code does not count (check_run.FAILING does)


def not_failure_lines(results: list[CheckRow]) -> list[str]:
    """One line per status and reason of the rows that are not failures but did not run or were refused:
    how many rows, of which models, and why in full (the table cuts it); none when there are none."""
    groups: dict[tuple[str, str], list[CheckRow]] = {}
    for result in results:
        if result.get("status") in NOT_FAILURES:
            groups.setdefault((result["status"], str(result.get("reason") or "no reason given")), []).append(result)
    lines = []
    for (status, reason), rows in groups.items():
        models = ", ".join(dict.fromkeys(r["model"] for r in rows))
        lines.append(f"{status}, not failures: {len(rows)} row{'' if len(rows) == 1 else 's'} of {models}: {reason}")
    return lines
