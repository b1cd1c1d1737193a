"""A model's batch axis: when its first dimension holds rows that can be cut or stacked, and which dimension
names must agree. Read from a model entry's inputs and outputs (repository/manifest.py's ValueInfo)."""

import re
from typing import Sequence

from onnxport.repository.manifest import ModelEntry, ValueInfo


def batch_axis(inputs: Sequence[ValueInfo], outputs: Sequence[ValueInfo]) -> bool:
    """The one rule for a model's first dimension being a batch axis (rows that can be cut or
    stacked): every input and every output has a dynamic first dimension (a name, or -1), every
    input has rank >= 2 (a 1-D input is a sequence, not rows: cutting it cuts the sequence), and the
    inputs' named first dimensions agree (one name, or unnamed). Outputs' names are not compared:
    exporters and shape inference name them as they like (`unk__0`, `Gemm_dim_0`). Written as the
    entry's `batch_axis`; golden rows are cut (reference files, the check's WebGPU rows, the bench)
    and requests batched (the server, the Triton export) only when it holds."""
    input_shapes = [v["shape"] for v in inputs if v["shape"]]
    shapes = [*input_shapes, *(v["shape"] for v in outputs if v["shape"])]
    if not inputs or len(shapes) < len(inputs) + len(outputs):  # no shape, or a scalar
        return False
    if any(isinstance(s[0], int) and s[0] >= 0 for s in shapes):
        return False
    if any(len(s) < 2 for s in input_shapes):
        return False
    names = {s[0] for s in input_shapes if isinstance(s[0], str) and shared_dimension(s[0])}
    return len(names) <= 1


# An identifier-like dim_param: what an exporter writes for a dimension it means to name.
DIMENSION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")


def shared_dimension(dim_param: str) -> str | None:
    """The name a dimension must agree on wherever it appears, or None for one that only says "unknown":
    onnx shape inference's `unk__N`, paddle2onnx's `?`, "None", or no identifier at all. The server's
    request check, batch-axis detection and a user's --data check all read names through this one rule."""
    if dim_param == "None" or not DIMENSION_NAME.match(dim_param) or re.fullmatch(r"unk__\d+", dim_param):
        return None
    return dim_param


def batch_axis_dynamic(entry: ModelEntry) -> bool:
    """batch_axis of a model entry (its inputs and outputs): the server's batching and the Triton export."""
    return batch_axis(entry["inputs"], entry["outputs"])
