"""A variant onnxruntime would not load or run where fp32 does: its record says so in one line.

The line names the node, its operator and onnxruntime's reason on one line, and that fp32 runs
(runtime_messages.py reads the message); onnxruntime's whole message is the record's `detail`, shown by
`onnxport info`. It was the reason itself: a wall of text about one Resize in the terminal and on the page.
"""

from __future__ import annotations

from dataclasses import replace

import onnx

from onnxport import runtime, runtime_messages
from onnxport.convert.graph import all_nodes
from onnxport.errors import ModelFileError
from onnxport.repository.variant_record import FailedVariant


def refused_record(
    precision: str, exc: ModelFileError, note: str = "", model: onnx.ModelProto | None = None
) -> FailedVariant:
    """The record of a variant whose file `exc` refused (no file kept); note ends the reason. model: the
    refused file's graph, for the operator of a node a load error names alone."""
    reason, detail = refused_reason(exc, model)
    record: FailedVariant = {"precision": precision, "status": "rejected", "reason": reason + note}
    if detail is not None:
        record["detail"] = detail
    return record


def refused_reason(exc: ModelFileError, model: onnx.ModelProto | None = None) -> tuple[str, str | None]:
    """(the one-line reason, onnxruntime's whole message), or (our message, None) when not onnxruntime's."""
    if isinstance(exc, runtime.RunError):
        verb, fp32 = "failed to run it", "fp32 runs on the same onnxruntime and inputs"
    elif isinstance(exc, runtime.LoadError):
        verb, fp32 = "cannot load it", "fp32 loads in the same onnxruntime"
    else:  # our own checks on what it computed: one line already
        return str(exc), None
    said = exc.refusal
    if said.node and not said.operator and model is not None:
        operator = next((n.op_type for n in all_nodes(model.graph) if n.name == said.node), None)
        said = replace(said, operator=operator)
    because = (said.reason or exc.detail).rstrip(".")
    return f"onnxruntime {runtime.VERSION} {verb}: {runtime_messages.where(said)}{because}; {fp32}", exc.detail
