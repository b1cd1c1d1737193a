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

from onnxport.dtypes import DTYPES, by_numpy_name
from onnxport.errors import OnnxportError
from onnxport.json_boundary import JsonObject
from onnxport.serving.v2 import json_budget, request_schema

# The most elements one input may declare; far above any real request, below what breaks numpy.
MAX_ELEMENTS = 2**31
UTF8_BOM = b"\xef\xbb\xbf"


class ProtocolError(OnnxportError):
    """A client request that does not follow the protocol or does not fit the model (HTTP 400)."""

    status = 400


class OverBudget(ProtocolError):
    """A request over one of the server's limits (HTTP 413): the message names the limit and its setting."""

    status = 413


# V2 datatype <-> numpy dtype (BYTES is a numpy object array of bytes), onnxruntime's type names and the
# manifest's numpy names as V2 datatypes: views of the one table in onnxport/dtypes.py.
DATATYPES: dict[str, np.dtype] = {d.v2: d.numpy_dtype for d in DTYPES}
ONNX_TYPE_TO_DATATYPE = {d.ort: d.v2 for d in DTYPES}
NUMPY_NAME_TO_DATATYPE = {name: d.v2 for name, d in by_numpy_name().items()}


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


@dataclass(frozen=True)
class RequestBudget:
    """What the JSON of a request to one model may hold: twice what such a request can need, so that a request
    with a mistake or two still reaches the message that names its field. A V2 request has 5 keys and 2
    objects of its own (the request and its parameters), 6 keys and 2 objects per input (name, shape, datatype,
    data, parameters and binary_data_size), 3 keys and 2 objects per output; it nests 3 levels above the
    deepest input's data, one more is allowed so that data nested too deep gets its own message."""

    subject: str  # "model 'iris' (1 input, 2 outputs)", for the messages
    json: json_budget.Budget
    rank: int
    string_setting: str | None = None  # the setting that gave json.string_bytes

    @staticmethod
    def of(
        subject: str, inputs: int, outputs: int, rank: int, string_bytes: int | None, string_setting: str | None = None
    ) -> RequestBudget:
        budget = json_budget.Budget(
            keys=2 * _keys(inputs, outputs),
            objects=2 * _objects(inputs, outputs),
            depth=4 + rank,
            string_bytes=string_bytes,
        )
        return RequestBudget(subject, budget, rank, string_setting)

    def refusal(self, over: json_budget.BudgetExceeded) -> ProtocolError:
        """The one-line error for what went over: 400 where no request to this model could be that, 413 for a
        setting's budget."""
        limit, at = over.limit, f"by byte {over.offset:,}"
        if over.what == "keys":
            return ProtocolError(
                f"the request holds more than {limit:,} JSON keys {at}; a request for "
                f"{self.subject} needs at most {limit // 2:,}"
            )
        if over.what == "objects":
            return ProtocolError(
                f"the request holds more than {limit:,} JSON objects {at}; a request for "
                f"{self.subject} needs at most {limit // 2:,}"
            )
        if over.what == "depth":
            return ProtocolError(
                f"the request's JSON is nested too deeply, more than {limit} levels {at}; a request "
                f"for {self.subject}, whose inputs have rank {self.rank} at most, needs "
                f"{limit - 1}"
            )
        if over.what == "key_bytes":
            return ProtocolError(
                f"the request has a JSON key longer than {limit:,} bytes {at}; the protocol's "
                f"keys are at most {_LONGEST_KEY} characters"
            )
        return OverBudget(
            f"the request holds more than {limit:,} bytes of JSON strings {at} (setting "
            f"{self.string_setting}): {self.subject} takes no text, so a request's strings are only "
            "names, datatypes and an id"
        )


_LONGEST_KEY = max(len(name) for name in (*request_schema.UNSUPPORTED, "binary_data_output"))


def _keys(inputs: int, outputs: int) -> int:
    return 5 + 6 * inputs + 3 * outputs


def _objects(inputs: int, outputs: int) -> int:
    return 2 + 2 * inputs + 2 * outputs


# For a caller that knows no model (a test of the wire format): room for 64 inputs and outputs of any rank.
ANY_MODEL = RequestBudget.of("any model", 64, 64, request_schema.MAX_RANK, None)


def decode_request(
    body: bytes | bytearray,
    header_length: int | None,
    *,
    max_inputs: int | None = None,
    max_outputs: int | None = None,
    budget: RequestBudget = ANY_MODEL,
    budget_checked: bool = False,
) -> InferRequest:
    """max_inputs/max_outputs: how many inputs and outputs the model can take; a longer list is refused
    before any element of it is looked at. The JSON header is checked against `budget` before it is parsed,
    unless the caller did that as the body came (budget_checked)."""
    if header_length is None:
        header_bytes, binary = body, b""
    else:
        if header_length < 0 or header_length > len(body):
            raise ProtocolError(
                f"Inference-Header-Content-Length is {header_length} but the body has {len(body)} bytes"
            )
        with memoryview(body) as view:  # one copy of each part, as slicing bytes would make
            header_bytes, binary = bytes(view[:header_length]), bytes(view[header_length:])
    if not budget_checked:
        try:
            json_budget.check(header_bytes, budget.json)
        except json_budget.BudgetExceeded as over:
            raise budget.refusal(over) from None
    if header_bytes.startswith(UTF8_BOM):
        header_bytes = header_bytes[len(UTF8_BOM) :]
    try:
        # Decoded as UTF-8 here, not by json.loads: it would also take UTF-16 and UTF-32, which the budget's
        # scan of the bytes cannot read.
        header = json.loads(header_bytes.decode("utf-8", "surrogatepass"))
    except RecursionError:
        raise ProtocolError("the request body is not valid JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise ProtocolError(
            f"the request body must be a JSON object with an 'inputs' list, got {type(header).__name__}"
        )
    _count("inputs", header.get("inputs"), max_inputs)
    _count("outputs", header.get("outputs"), max_outputs)
    try:
        request = request_schema.validate(header)
    except request_schema.RequestError as exc:
        raise ProtocolError(str(exc)) from None
    if request.id is not None:
        _utf8(request.id, "id")

    inputs: dict[str, np.ndarray] = {}
    offset = 0
    for position, raw in enumerate(request.inputs):
        _utf8(raw.name, f"inputs[{position}].name")
        name, array, used = _decode_input(raw, position, "data" in header["inputs"][position], binary, offset)
        if name in inputs:
            raise ProtocolError(f"input {name!r} is given twice")
        inputs[name] = array
        offset += used
    if offset != len(binary):
        raise ProtocolError(
            f"binary data sizes add up to {offset} bytes but {len(binary)} bytes follow the JSON header"
        )

    outputs: list[str] | None = None
    binary_outputs: dict[str, bool] = {}
    if request.outputs is not None:
        outputs = []
        for position, wanted in enumerate(request.outputs):
            _utf8(wanted.name, f"outputs[{position}].name")
            if wanted.name in outputs:
                raise ProtocolError(f"output {wanted.name!r} is requested twice")
            outputs.append(wanted.name)
            if wanted.parameters is not None and wanted.parameters.binary_data is not None:
                binary_outputs[wanted.name] = wanted.parameters.binary_data
    parameters = request.parameters
    return InferRequest(
        id=request.id,
        inputs=inputs,
        outputs=outputs,
        binary_outputs=binary_outputs,
        binary_by_default=bool(parameters and parameters.binary_data_output),
    )


def _count(field: str, items: Any, most: int | None) -> None:
    if most is not None and isinstance(items, list) and len(items) > most:
        raise ProtocolError(f"field {field!r}: {len(items):,} {field}; this model has {most} (each named at most once)")


def _utf8(text: str, what: str) -> None:
    """JSON can carry lone surrogates ("\\ud800"), which no UTF-8 text (or model) can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ProtocolError(f"{what}: not valid Unicode text ({exc.reason} at character {exc.start})") from None


def _decode_input(
    raw: request_schema.RequestInput, position: int, has_data: bool, binary: bytes, offset: int
) -> tuple[str, np.ndarray, int]:
    name, shape, datatype = raw.name, raw.shape, raw.datatype
    count = math.prod(shape)  # exact: np.prod would wrap around on huge shapes
    if count > MAX_ELEMENTS:
        raise ProtocolError(f"input {name!r}: shape {shape} has {count} elements, over the {MAX_ELEMENTS} limit")
    size = raw.parameters.binary_data_size if raw.parameters is not None else None
    if size is not None:
        if has_data:
            raise ProtocolError(f"input {name!r} has both 'data' and a binary_data_size parameter; send one")
        if offset + size > len(binary):
            raise ProtocolError(
                f"input {name!r}: binary_data_size {size} goes past the end of the body "
                f"({len(binary) - offset} bytes left)"
            )
        array = _from_binary(name, datatype, binary[offset : offset + size], count)
        return name, array.reshape(shape), size
    if not has_data:
        raise ProtocolError(f"input {name!r} has neither 'data' nor a binary_data_size parameter")
    return name, _from_json(name, datatype, raw.data, shape, count), 0


def _from_binary(name: str, datatype: str, data: bytes, count: int) -> np.ndarray:
    if datatype == "BYTES":
        items: list[bytes] = []
        at = 0
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
    flat = _flatten(name, data, shape, count)
    if datatype == "BYTES":
        if not all(isinstance(v, str) for v in flat):
            raise ProtocolError(f"input {name!r}: BYTES data must be strings in JSON")
        for index, value in enumerate(flat):
            _utf8(value, f"input {name!r} element {index}")
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


def _flatten(name: str, data: Any, shape: list[int], count: int) -> list:
    """The values of `data` in row-major order: a flat list of `count` scalars, or lists nested exactly
    as `shape` (each level as long as its dimension, scalars at the bottom). Anything else is refused,
    even when the total count happens to be right."""
    if not isinstance(data, list):
        raise ProtocolError(f"input {name!r}: 'data' must be a list, got {type(data).__name__}")
    if not any(isinstance(item, list) for item in data):
        if len(data) != count:
            raise ProtocolError(f"input {name!r}: {len(data)} data elements for shape {shape} ({count} elements)")
        return data
    flat: list = []
    level = [data]
    for depth, dim in enumerate(shape):
        following = []
        for item in level:
            if not isinstance(item, list) or len(item) != dim:
                got = f"a list of {len(item)}" if isinstance(item, list) else type(item).__name__
                raise ProtocolError(
                    f"input {name!r}: 'data' nested at depth {depth} must be lists of {dim} (shape {shape}), got {got}"
                )
            following.extend(item)
        level = following
    for item in level:
        if isinstance(item, list):
            raise ProtocolError(f"input {name!r}: 'data' is nested deeper than its shape {shape}")
        flat.append(item)
    return flat


def encode_response(
    model: str, version: str, request: InferRequest, outputs: dict[str, np.ndarray]
) -> tuple[bytes, int | None]:
    """The response body, and the JSON header's length when binary data follows it."""
    described, chunks = [], []
    for name, value in outputs.items():
        datatype = datatype_of(value)
        entry: JsonObject = {"name": name, "datatype": datatype, "shape": list(value.shape)}
        if request.wants_binary(name):
            chunk = to_binary(value)
            entry["parameters"] = {"binary_data_size": len(chunk)}
            chunks.append(chunk)
        else:
            entry["data"] = to_json_data(value)
        described.append(entry)
    header: JsonObject = {"model_name": model, "model_version": version, "outputs": described}
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
