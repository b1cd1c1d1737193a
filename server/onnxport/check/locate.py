"""Where does a runtime diverge? Find the first node whose output differs beyond tolerance.

Every intermediate value of the variant is exposed as an extra graph output; the
browser runtime and the server's onnxruntime run that debug model on the same
inputs, and the values are compared node by node in graph order.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onnxport import runtime as ort_runtime
from onnxport.accuracy import browser_tolerances, compare, judgement
from onnxport.accuracy.tolerance import Tolerance
from onnxport.check.report_types import CheckRow, Divergence
from onnxport.convert.rescue.node_errors import debug_model
from onnxport.repository.manifest import ModelEntry

__all__ = ["debug_model", "first_divergence", "tolerance_for", "write_debug_model"]


def write_debug_model(artifact: Path, debug_root: Path) -> str:
    """Write the debug model of an artifact into debug_root; returns its file name."""
    data = debug_model(onnx.load(str(artifact))).SerializeToString()
    name = f"{hashlib.sha256(data).hexdigest()}.onnx"
    debug_root.mkdir(parents=True, exist_ok=True)
    (debug_root / name).write_bytes(data)
    return name


def first_divergence(
    model: onnx.ModelProto,
    reference: dict[str, np.ndarray],
    browser: dict[str, np.ndarray],
    tol: browser_tolerances.Tolerance,
) -> Divergence | None:
    """The first node (graph order) with an output outside the tolerance."""
    for index, node in enumerate(model.graph.node):
        for name in node.output:
            if name not in reference or name not in browser:
                continue
            expected, got = reference[name], browser[name]
            problem = _differs(expected, got, tol)
            if problem:
                return {
                    "node": node.name or f"#{index}",
                    "op_type": node.op_type,
                    "node_index": index,
                    "output": name,
                    **problem,
                }
    return None


def _differs(expected: np.ndarray, got: np.ndarray, tol) -> Divergence | None:
    if expected.shape != got.shape:
        return {"reason": f"shape {list(got.shape)}, expected {list(expected.shape)}"}
    if expected.dtype.kind not in "fc":
        bad = expected != got
    else:
        bad = compare.outside(expected, got, tol)
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    with np.errstate(invalid="ignore"):
        diff = np.abs(expected.astype(np.float64) - got.astype(np.float64))
    finite = diff[np.isfinite(diff)]
    # Only finite differences make a max (the report is strict JSON); non-finite ones are counted.
    return {
        "index": list(where),
        "expected": _item(expected[where]),
        "got": _item(got[where]),
        "max_abs": float(finite.max()) if finite.size else 0.0,
        "nonfinite": int((~np.isfinite(diff)).sum()),
        "mismatches": int(bad.sum()),
    }


def _item(value) -> Any:
    item = value.item()
    return item if not isinstance(item, float) or np.isfinite(item) else str(item)


def reference_outputs(debug_path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort_runtime.create_session(debug_path.read_bytes(), label=f"debug model {debug_path.name}")
    return ort_runtime.run(session, feeds, label="debug model")


def tolerance_for(entry: ModelEntry, result: CheckRow, tolerances_file: Path | None) -> Tolerance:
    """The element rule the diverging node is looked for by: an fp32 file's floor (the one judgement's),
    else the table's row for the variant and runtime."""
    if result.get("arithmetic", "fp32") == "fp32":
        table = browser_tolerances.table(tolerances_file)[f"fp32/{result['runtime']}"]
        return judgement.tolerance(judgement.fp32_floor(table, entry.get("validation")))
    return browser_tolerances.lookup(result["variant"], result["runtime"], tolerances_file)
