"""How many bytes each value of a model takes on given inputs, found without holding them all.

The error-per-node measurement (node_errors.py) cuts its work into pieces by these sizes, and the
import's memory bound is stated with the largest of them (largest_value): an import's peak RSS stays
within a multiple of the model's size plus its largest intermediate tensor (tests/convert/test_corpus.py).

The probe is the model with a Size node right after each value's producer, run in node order: its
outputs are scalars, so onnxruntime frees every value once its readers have run, as in a plain run.
Exposing the values themselves as outputs would make onnxruntime hold all of them at once (it
materialises every graph output, fetched or not).
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from onnxport import runtime
from onnxport.convert.graph import copy_model, unique_name, value_names
from onnxport.recipe import Feeds

UNKNOWN_ITEMSIZE = 8  # bytes per element where inference cannot tell the type: never an underestimate


def tensor_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element type of every main-graph value that inference types as a tensor."""
    inferred = onnx.shape_inference.infer_shapes(model)
    return {
        v.name: v.type.tensor_type.elem_type
        for v in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]
        if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type
    }


def itemsize(elem_type: int | None) -> int:
    if not elem_type:
        return UNKNOWN_ITEMSIZE
    try:
        return helper.tensor_dtype_to_np_dtype(elem_type).itemsize
    except (KeyError, TypeError):  # bfloat16, float8 and 4-bit types have no plain numpy dtype here
        return UNKNOWN_ITEMSIZE


def value_bytes(
    model: onnx.ModelProto, feeds: list[Feeds], names: set[str] | None = None, types: dict[str, int] | None = None
) -> list[dict[str, int]]:
    """Per feed, the bytes of each main-graph node output (those in `names`, if given) typed as a tensor.

    Values inference cannot type are left out (a Size of a sequence would not load): callers treat a
    missing value as unknown. Raises ModelFileError when onnxruntime cannot load or run the probe.
    """
    types = tensor_types(model) if types is None else types
    probe = copy_model(model)
    taken = value_names(probe.graph)
    sizes: dict[str, str] = {}  # value -> its Size output
    nodes = []
    for node in probe.graph.node:
        nodes.append(node)
        for name in node.output:
            if name and name in types and (names is None or name in names) and name not in sizes:
                sizes[name] = unique_name(f"{name}_size", taken)
                nodes.append(helper.make_node("Size", [name], [sizes[name]], name=sizes[name]))
    del probe.graph.output[:]
    probe.graph.output.extend(helper.make_tensor_value_info(out, TensorProto.INT64, []) for out in sizes.values())
    del probe.graph.node[:]
    probe.graph.node.extend(nodes)
    if not sizes:
        return [{} for _ in feeds]
    session = runtime.create_session(probe.SerializeToString(), label="value size probe", in_node_order=True)
    inputs = {i.name for i in session.get_inputs()}
    found = []
    for feed in feeds:
        got = runtime.run_outputs(
            session, list(sizes.values()), {k: v for k, v in feed.items() if k in inputs}, label="value size probe"
        )
        found.append({name: int(got[out]) * itemsize(types.get(name)) for name, out in sizes.items()})
    return found


def largest_value(model: onnx.ModelProto, feeds: list[Feeds]) -> tuple[str, int]:
    """(name, bytes) of the largest main-graph value on any one of the feeds, inputs and outputs included."""
    best = ("", 0)
    for feed, sizes in zip(feeds, value_bytes(model, feeds)):
        candidates = [*sizes.items(), *((k, int(v.nbytes)) for k, v in feed.items())]
        for name, size in candidates:
            if size > best[1]:
                best = (name, size)
    return best
