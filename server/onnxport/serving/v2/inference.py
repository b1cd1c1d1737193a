"""Run a V2 request on a served variant: check the inputs against the model, run, pick outputs."""

from __future__ import annotations

import re

import numpy as np

from onnxport import runtime
from onnxport.json_boundary import JsonObject
from onnxport.repository.batch_axis import batch_axis_dynamic, shared_dimension
from onnxport.repository.manifest import ValueInfo
from onnxport.serving.models.batching_policy import BatchingPolicy
from onnxport.serving.models.catalog import Catalog
from onnxport.serving.models.sessions import SessionPool
from onnxport.serving.statistics import Timing
from onnxport.serving.v2.protocol import (
    NUMPY_NAME_TO_DATATYPE,
    InferRequest,
    OverBudget,
    ProtocolError,
)


def tensor_metadata(values: list[ValueInfo]) -> list[JsonObject]:
    """Manifest inputs/outputs as V2 metadata: datatype names, -1 for every dynamic dim."""
    return [
        {
            "name": v["name"],
            "datatype": NUMPY_NAME_TO_DATATYPE.get(v["dtype"], v["dtype"].upper()),
            "shape": [d if isinstance(d, int) and d >= 0 else -1 for d in (v["shape"] or [])],
        }
        for v in values
    ]


def check_inputs(request: InferRequest, inputs: list[ValueInfo]) -> None:
    """Every model input present once, with its datatype and a shape that fits; nothing else."""
    expected = {i["name"]: i for i in tensor_metadata(inputs)}
    unknown = sorted(set(request.inputs) - set(expected))
    if unknown:
        raise ProtocolError(f"unknown input {unknown[0]!r}; the model's inputs are {', '.join(expected)}")
    for name, spec in expected.items():
        if name not in request.inputs:
            raise ProtocolError(f"missing input {name!r} ({spec['datatype']}, shape {spec['shape']})")
        value = request.inputs[name]
        datatype = "BYTES" if value.dtype == object else NUMPY_NAME_TO_DATATYPE[value.dtype.name]
        if datatype != spec["datatype"]:
            raise ProtocolError(f"input {name!r}: datatype {datatype}, the model expects {spec['datatype']}")
        shape = list(value.shape)
        if len(shape) != len(spec["shape"]) or any(e != -1 and e != g for e, g in zip(spec["shape"], shape)):
            raise ProtocolError(f"input {name!r}: shape {shape} does not match the model's {spec['shape']} (-1 = any)")
        if 0 in shape:
            raise ProtocolError(f"input {name!r}: shape {shape} has no elements")
    check_named_dimensions(request, inputs)


def check_named_dimensions(request: InferRequest, inputs: list[ValueInfo]) -> None:
    """Inputs that share a named dimension (minilm's input_ids and attention_mask: batch, sequence) agree
    on its size. onnxruntime does not check it: an Add or a Mul between them broadcasts [1, 8] against
    [8, 1] and answers for an 8x8 batch that nobody sent. Placeholder names (`unk__0`, `?`) name nothing."""
    seen: dict[str, tuple[str, int, int]] = {}  # dimension name -> the first input, axis and size
    for spec in inputs:
        for axis, dim in enumerate(spec["shape"] or []):
            if not isinstance(dim, str) or shared_dimension(dim) is None:
                continue
            size = request.inputs[spec["name"]].shape[axis]
            first, first_axis, first_size = seen.setdefault(dim, (spec["name"], axis, size))
            if size != first_size:
                raise ProtocolError(
                    f"inputs {first!r} and {spec['name']!r} disagree on the model's dimension {dim!r}: "
                    f"{first!r} has {first_size} on axis {first_axis}, {spec['name']!r} has {size} on axis {axis}"
                )


def infer(
    catalog: Catalog,
    sessions: SessionPool,
    model: str,
    version: str | None,
    request: InferRequest,
    batching: BatchingPolicy | None = None,
    timing: Timing | None = None,
) -> tuple[str, dict[str, np.ndarray]]:
    """timing, if given, hears the checks as compute_input and the batcher's wait as queue."""
    entry, version, record = catalog.variant(model, version)
    check_inputs(request, entry["inputs"])
    outputs = [o["name"] for o in entry["outputs"]]
    wanted = request.outputs if request.outputs is not None else outputs
    for name in wanted:
        if name not in outputs:
            raise ProtocolError(f"unknown output {name!r}; the model's outputs are {', '.join(outputs)}")
    label = f"{model} {version}"
    feeds = {k: _for_onnxruntime(v) for k, v in request.inputs.items()}
    if timing is not None:
        timing.phase("compute_input")
    try:
        if batching and batching["enabled"](model) and batch_axis_dynamic(entry):
            batcher = sessions.batcher(
                record["sha256"], catalog.file(record["file"]), label, batching["window_ms"], batching["max_batch"]
            )
            if timing is not None:  # ours or Ray's (ray/batching.py): both tell the request its wait and batch
                return version, batcher.run(wanted, feeds, answered=timing.heard_batcher)
            return version, batcher.run(wanted, feeds)
        session = sessions.get(record["sha256"], catalog.file(record["file"]), label)
        return version, runtime.run_outputs(session, wanted, feeds, label=label, options=runtime.shrinking())
    except runtime.RunError as exc:
        given = ", ".join(f"{name!r} {list(value.shape)}" for name, value in request.inputs.items())
        if exc.out_of_memory:  # the inputs' size decides the run's memory: a request too big for this server
            raise OverBudget(
                f"the model cannot run on inputs this large ({given}) in this server's memory: "
                f"onnxruntime says: {_short(exc.detail)}; send fewer rows per request"
            ) from None
        if not exc.invalid_argument:
            raise
        # The artifact ran its golden inputs when it was built: a refusal of these is about them.
        raise ProtocolError(
            f"the model cannot run on these inputs ({given}): onnxruntime says: {_short(exc.detail)}"
        ) from None


def _short(detail: str) -> str:
    """onnxruntime's message without its "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Non-zero status..." lead."""
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", detail)
    return re.sub(
        r"Non-zero status code returned while running (\w+) node\. Name:'(.*?)' Status Message: ",
        r"\1 node '\2': ",
        text,
    )


def _for_onnxruntime(value: np.ndarray) -> np.ndarray:
    # String tensors go to onnxruntime as str, not bytes.
    if value.dtype == object:
        decoded = [v.decode() if isinstance(v, bytes) else v for v in value.reshape(-1)]
        return np.array(decoded, dtype=object).reshape(value.shape)
    return value
