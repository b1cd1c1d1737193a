"""The Open Inference Protocol (V2) wire format: datatypes, request decoding, response encoding.

Pure functions over bytes and numpy arrays, no Flask: the HTTP layer calls them.
Both JSON bodies and the binary tensor extension (a JSON header of
`Inference-Header-Content-Length` bytes, then raw little-endian tensors) are read
and written, as KServe and Triton define them.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnxport.errors import OnnxportError

# The most elements one input may declare; far above any real request, below what breaks numpy.
MAX_ELEMENTS = 2**31


class ProtocolError(OnnxportError):
    """A client request that does not follow the protocol or does not fit the model (HTTP 400)."""


# V2 datatype <-> numpy dtype. BYTES is a numpy object array of bytes.
DATATYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(bool),
    "UINT8": np.dtype(np.uint8), "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32), "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8), "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32), "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16), "FP32": np.dtype(np.float32), "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(object),
}
ONNX_TYPE_TO_DATATYPE = {
    "tensor(bool)": "BOOL", "tensor(uint8)": "UINT8", "tensor(uint16)": "UINT16",
    "tensor(uint32)": "UINT32", "tensor(uint64)": "UINT64", "tensor(int8)": "INT8",
    "tensor(int16)": "INT16", "tensor(int32)": "INT32", "tensor(int64)": "INT64",
    "tensor(float16)": "FP16", "tensor(float)": "FP32", "tensor(double)": "FP64",
    "tensor(string)": "BYTES",
}
NUMPY_NAME_TO_DATATYPE = {
    "bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
    "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
    "float16": "FP16", "float32": "FP32", "float64": "FP64", "object": "BYTES", "str": "BYTES",
}


@dataclass
class InferRequest:
    id: str | None
    inputs: dict[str, np.ndarray]
    # Requested outputs (None = all); per output, binary or JSON if the request says so,
    # else the request-level binary_data_output parameter decides.
    outputs: list[str] | None
    binary_outputs: dict[str, bool] = field(default_factory=dict)
    binary_by_default: bool = False

    def wants_binary(self, output: str) -> bool:
        return self.binary_outputs.get(output, self.binary_by_default)


def decode_request(body: bytes, header_length: int | None) -> InferRequest:
    if header_length is None:
        header_bytes, binary = body, b""
    else:
        if header_length < 0 or header_length > len(body):
            raise ProtocolError(
                f"Inference-Header-Content-Length is {header_length} but the body has {len(body)} bytes"
            )
        header_bytes, binary = body[:header_length], body[header_length:]
    try:
        header = json.loads(header_bytes)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise ProtocolError("the request body must be a JSON object with an 'inputs' list")
    raw_inputs = header.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise ProtocolError("the request must have a non-empty 'inputs' list")

    inputs: dict[str, np.ndarray] = {}
    offset = 0
    for position, raw in enumerate(raw_inputs):
        name, array, used = _decode_input(raw, position, binary, offset)
        if name in inputs:
            raise ProtocolError(f"input {name!r} is given twice")
        inputs[name] = array
        offset += used
    if offset != len(binary):
        raise ProtocolError(
            f"binary data sizes add up to {offset} bytes but {len(binary)} bytes follow the JSON header"
        )

    parameters = _parameters(header, "the request")
    outputs, binary_outputs = None, {}
    if header.get("outputs") is not None:
        if not isinstance(header["outputs"], list):
            raise ProtocolError("'outputs' must be a list of {\"name\": ...} objects")
        outputs = []
        for raw in header["outputs"]:
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
                raise ProtocolError("each requested output must be an object with a 'name'")
            outputs.append(raw["name"])
            output_parameters = _parameters(raw, f"output {raw['name']!r}")
            if "binary_data" in output_parameters:
                binary_outputs[raw["name"]] = bool(output_parameters["binary_data"])
    request_id = header.get("id")
    return InferRequest(
        id=str(request_id) if request_id is not None else None,
        inputs=inputs,
        outputs=outputs,
        binary_outputs=binary_outputs,
        binary_by_default=bool(parameters.get("binary_data_output", False)),
    )


def _decode_input(raw: Any, position: int, binary: bytes, offset: int) -> tuple[str, np.ndarray, int]:
    if not isinstance(raw, dict):
        raise ProtocolError(f"inputs[{position}] must be an object with name, shape, datatype and data")
    name = raw.get("name")
    if not isinstance(name, str):
        raise ProtocolError(f"inputs[{position}] has no 'name'")
    shape = raw.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ProtocolError(f"input {name!r}: 'shape' must be a list of non-negative integers, got {shape!r}")
    datatype = raw.get("datatype")
    if datatype not in DATATYPES:
        raise ProtocolError(f"input {name!r}: datatype {datatype!r} is not one of {', '.join(DATATYPES)}")
    count = math.prod(shape)  # exact: np.prod would wrap around on huge shapes
    if count > MAX_ELEMENTS:
        raise ProtocolError(f"input {name!r}: shape {shape} has {count} elements, over the {MAX_ELEMENTS} limit")
    size = _parameters(raw, f"input {name!r}").get("binary_data_size")
    if size is not None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ProtocolError(f"input {name!r}: binary_data_size must be a non-negative integer, got {size!r}")
        if offset + size > len(binary):
            raise ProtocolError(
                f"input {name!r}: binary_data_size {size} goes past the end of the body "
                f"({len(binary) - offset} bytes left)"
            )
        array = _from_binary(name, datatype, binary[offset : offset + size], count)
        return name, array.reshape(shape), size
    if "data" not in raw:
        raise ProtocolError(f"input {name!r} has neither 'data' nor a binary_data_size parameter")
    return name, _from_json(name, datatype, raw["data"], shape, count), 0


def _from_binary(name: str, datatype: str, data: bytes, count: int) -> np.ndarray:
    if datatype == "BYTES":
        items, at = [], 0
        while at < len(data):
            if at + 4 > len(data):
                raise ProtocolError(f"input {name!r}: BYTES element {len(items)} has a truncated length prefix")
            (length,) = struct.unpack_from("<I", data, at)
            at += 4
            if at + length > len(data):
                raise ProtocolError(f"input {name!r}: BYTES element {len(items)} is longer than the data left")
            items.append(data[at : at + length])
            at += length
        if len(items) != count:
            raise ProtocolError(f"input {name!r}: {len(items)} BYTES elements for a shape of {count} elements")
        return np.array(items, dtype=object)
    dtype = DATATYPES[datatype]
    expected = count * dtype.itemsize
    if len(data) != expected:
        raise ProtocolError(
            f"input {name!r}: binary_data_size is {len(data)} bytes; shape and {datatype} need {expected}"
        )
    return np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype, copy=True)


def _from_json(name: str, datatype: str, data: Any, shape: list[int], count: int) -> np.ndarray:
    flat = _flatten(data)
    if len(flat) != count:
        raise ProtocolError(f"input {name!r}: {len(flat)} data elements for shape {shape} ({count} elements)")
    if datatype == "BYTES":
        if not all(isinstance(v, str) for v in flat):
            raise ProtocolError(f"input {name!r}: BYTES data must be strings in JSON")
        return np.array([v.encode() for v in flat], dtype=object).reshape(shape)
    if datatype == "BOOL":
        if not all(isinstance(v, bool) for v in flat):
            raise ProtocolError(f"input {name!r}: BOOL data must be true/false")
    elif not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in flat):
        raise ProtocolError(f"input {name!r}: {datatype} data must be numbers")
    elif datatype.startswith(("INT", "UINT")) and not all(isinstance(v, int) for v in flat):
        raise ProtocolError(f"input {name!r}: {datatype} data must be integers")
    dtype = DATATYPES[datatype]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if flat and (min(flat) < info.min or max(flat) > info.max):
            raise ProtocolError(f"input {name!r}: a value is outside the {datatype} range [{info.min}, {info.max}]")
    elif dtype.kind == "f":
        finfo = np.finfo(dtype)
        # Python compares big ints with floats exactly; NaN/Infinity literals are taken as sent.
        if any(abs(v) > float(finfo.max) for v in flat if not (isinstance(v, float) and not math.isfinite(v))):
            raise ProtocolError(f"input {name!r}: a value is outside the {datatype} range (+/-{float(finfo.max):g})")
    return np.array(flat, dtype=dtype).reshape(shape)


def _parameters(owner: dict, what: str) -> dict:
    parameters = owner.get("parameters")
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise ProtocolError(f"{what}: 'parameters' must be a JSON object, got {type(parameters).__name__}")
    return parameters


def _flatten(data: Any) -> list:
    """Row-major flattening of nested JSON lists (a flat list stays as it is)."""
    if not isinstance(data, list):
        return [data]
    flat: list = []
    stack = [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            flat.append(item)
        else:
            stack.pop()
    return flat


def encode_response(
    model: str, version: str, request: InferRequest, outputs: dict[str, np.ndarray]
) -> tuple[bytes, int | None]:
    """The response body, and the JSON header's length when binary data follows it."""
    described, chunks = [], []
    for name, value in outputs.items():
        datatype = datatype_of(value)
        entry: dict[str, Any] = {"name": name, "datatype": datatype, "shape": list(value.shape)}
        if request.wants_binary(name):
            chunk = to_binary(value)
            entry["parameters"] = {"binary_data_size": len(chunk)}
            chunks.append(chunk)
        else:
            entry["data"] = to_json_data(value)
        described.append(entry)
    header: dict[str, Any] = {"model_name": model, "model_version": version, "outputs": described}
    if request.id is not None:
        header["id"] = request.id
    header_bytes = json.dumps(header, separators=(",", ":")).encode()
    if not chunks:
        return header_bytes, None
    return header_bytes + b"".join(chunks), len(header_bytes)


def datatype_of(value: np.ndarray) -> str:
    if value.dtype.kind in "OSU":
        return "BYTES"
    return NUMPY_NAME_TO_DATATYPE[value.dtype.name]


def to_binary(value: np.ndarray) -> bytes:
    if value.dtype.kind in "OSU":
        parts = []
        for item in value.reshape(-1):
            raw = item if isinstance(item, bytes) else str(item).encode()
            parts.append(struct.pack("<I", len(raw)) + raw)
        return b"".join(parts)
    return np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()


def to_json_data(value: np.ndarray) -> list:
    flat = value.reshape(-1)
    if value.dtype.kind in "OSU":
        return [v.decode(errors="replace") if isinstance(v, bytes) else str(v) for v in flat]
    if value.dtype.kind == "f":
        # JSON has no NaN/inf: those come back as null (binary data carries them exactly).
        return [float(v) if np.isfinite(v) else None for v in flat.astype(np.float64)]
    return flat.tolist()
