"""Per-variant reference data: a few golden rows and what native onnxruntime gives on them.

The browser verifies each (artifact, runtime) on first use against these, from static
files alone (docs/reference/manifest.md, "reference"). Each variant has its own: fp16 and int8
outputs differ from fp32's by more than the browser's tolerance.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from onnxport import runtime, tensor_json
from onnxport.repository.store import Transaction

SCHEMA = "onnxport.reference"
SCHEMA_VERSION = 1
REFERENCE_ROWS = 2
GOLDEN_SET = 0

Feeds = dict[str, np.ndarray]


def reference_inputs(golden: Feeds, inputs: list[dict[str, Any]], batch_axis: bool) -> tuple[Feeds, int]:
    """(feeds, rows): golden set 0 cut to its first REFERENCE_ROWS rows when the model's first
    dimension is a batch axis (the entry's `batch_axis`, repository/manifest.batch_axis) and every
    input has a row; otherwise whole, rows 1. A 1-D sequence input is never cut: its length is not rows."""
    feeds = {i["name"]: golden[i["name"]] for i in inputs}
    if not (batch_axis and feeds and all(v.ndim and v.shape[0] >= 1 for v in feeds.values())):
        return feeds, 1
    rows = min(REFERENCE_ROWS, *(v.shape[0] for v in feeds.values()))
    return {name: value[:rows] for name, value in feeds.items()}, rows


def stage(
    transaction: Transaction, model: str, variant: str, session, feeds: Feeds, rows: int, form: str | None = None
) -> dict[str, Any]:
    """Run the variant's (or its form's) session on feeds, stage the reference file; returns the
    manifest record."""
    outputs = runtime.run(session, feeds, label=f"{model} {variant}" + (f" ({form} form)" if form else ""))
    document = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "model": model,
        "variant": variant,
        "inputs": tensor_json.encode(feeds),
        "outputs": tensor_json.encode(outputs),
    }
    if form:
        document["form"] = form
    data = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return {**transaction.put_file(data, "json"), "rows": rows, "golden_set": GOLDEN_SET}
