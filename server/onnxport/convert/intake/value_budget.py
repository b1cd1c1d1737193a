"""A value too big to compute, found from its inferred shape before any session runs the graph.

A 4 KB model can compute gigabytes: ConstantOfShape (or Expand, Tile, Range) with a constant shape of
[30000, 30000] is a 3.4 GiB tensor that onnxruntime allocates and fills when the golden data is computed.
Shape inference with data propagation (export.check_and_infer) already knows such a shape, so a main-graph
value whose every dimension is known and whose bytes pass the budget is refused right after it, naming the
node, the shape and the budget. Values whose size is only known at run time (a shape computed from the inputs)
are left to the import's address-space limit (convert/sandbox.py), the backstop.
"""

from __future__ import annotations

import math

import onnx
from onnx import helper

from onnxport.errors import UsageError

UNKNOWN_ITEMSIZE = 8  # bytes per element of a type numpy cannot tell (bfloat16, 4-bit): never an underestimate
# The budget for one value is this share of the import's address-space limit: a value is held by onnxruntime,
# copied out to numpy, and computed again by the session of each variant and pass.
SHARE_OF_MEMORY_LIMIT = 4
BUDGET_NAME = "a quarter of setting import_memory_limit, --memory-limit"


def check_value_sizes(model: onnx.ModelProto, label: str, budget: int | None, budget_name: str = BUDGET_NAME) -> None:
    """Refuse (UsageError, exit 2) a model with a main-graph value of known shape over `budget` bytes (None: any).
    `model` has been through shape inference; Constant nodes are left out (their bytes are in the file already)."""
    if not budget:
        return
    producers = {out: node for node in model.graph.node for out in node.output}
    for info in (*model.graph.value_info, *model.graph.output):
        node = producers.get(info.name)
        tensor = info.type.tensor_type
        if (
            node is None
            or node.op_type == "Constant"
            or not info.type.HasField("tensor_type")
            or not tensor.HasField("shape")
        ):
            continue
        if not all(d.HasField("dim_value") and d.dim_value >= 0 for d in tensor.shape.dim):
            continue  # known at run time only: the address-space limit's
        dims = [int(d.dim_value) for d in tensor.shape.dim]
        size = math.prod(dims) * _itemsize(tensor.elem_type)
        if size > budget:
            name = f"{node.name!r} ({node.op_type})" if node.name else f"an unnamed {node.op_type}"
            raise UsageError(
                f"{label}: node {name} makes {info.name!r}, a {_type_name(tensor.elem_type)} value of "
                f"shape {dims}: {_size(size)}, more than the budget for one value of {_size(budget)} "
                f"({budget_name}); refused before any session ran the graph"
            )


def budget_for(memory_limit: int | None) -> int | None:
    """The budget for one value under an address-space limit (None or 0: no limit, no budget)."""
    return memory_limit // SHARE_OF_MEMORY_LIMIT if memory_limit else None


def _itemsize(elem_type: int) -> int:
    try:
        return helper.tensor_dtype_to_np_dtype(elem_type).itemsize
    except (KeyError, TypeError, ValueError):
        return UNKNOWN_ITEMSIZE


def _type_name(elem_type: int) -> str:
    try:
        return helper.tensor_dtype_to_string(elem_type).removeprefix("TensorProto.").lower()
    except (KeyError, ValueError):
        return f"type {elem_type}"


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"
