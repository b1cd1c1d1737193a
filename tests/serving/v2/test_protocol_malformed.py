"""serving/v2/protocol.py refusing malformed requests: a ProtocolError naming what is wrong, never another exception."""

from __future__ import annotations

import json

import pytest
from protocol_helpers import json_body

from onnxport.serving.v2.protocol import ProtocolError, decode_request

X = {"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]}


def _with(**changes) -> dict:
    return {**X, **changes}


def _json(*inputs, **extra) -> tuple[bytes, None]:
    return json_body(list(inputs), **extra), None


def _binary_header(size, datatype="FP32", shape=(2, 2), name="x") -> bytes:
    return json.dumps(
        {
            "inputs": [
                {"name": name, "shape": list(shape), "datatype": datatype, "parameters": {"binary_data_size": size}}
            ]
        }
    ).encode()


def _binary(size, payload: bytes, **kw) -> tuple[bytes, int]:
    header = _binary_header(size, **kw)
    return header + payload, len(header)


MALFORMED = {
    # whole body
    "bad JSON": ((b'{"inputs": [', None), ["not valid JSON"]),
    "not UTF-8": ((b'{"inputs": "\xff"}', None), ["not valid JSON"]),
    "not an object": ((b"[1, 2]", None), ["JSON object", "'inputs'"]),
    "missing inputs": ((b"{}", None), ["'inputs'"]),
    "empty inputs": (_json(), ["non-empty", "'inputs'"]),
    "inputs not a list": ((b'{"inputs": {"name": "x"}}', None), ["'inputs'"]),
    "input not an object": (_json("x"), ["inputs[0]"]),
    "input without a name": (_json({"shape": [1], "datatype": "FP32", "data": [1]}), ["inputs[0]", "'name'"]),
    "input given twice": (_json(X, X), ["'x'", "twice"]),
    # shape
    "shape missing": (_json({k: v for k, v in X.items() if k != "shape"}), ["'x'", "shape"]),
    "negative dim": (_json(_with(shape=[2, -2])), ["'x'", "shape", "[2, -2]"]),
    "float dim": (_json(_with(shape=[2, 2.0])), ["'x'", "shape"]),
    "bool dim": (_json(_with(shape=[True, 4])), ["'x'", "shape"]),
    "shape not a list": (_json(_with(shape="2,2")), ["'x'", "shape"]),
    # datatype
    "unknown datatype": (_json(_with(datatype="FP128")), ["'x'", "'FP128'", "FP32"]),
    "lower-case datatype": (_json(_with(datatype="fp32")), ["'x'", "'fp32'"]),
    "no datatype": (_json({k: v for k, v in X.items() if k != "datatype"}), ["'x'", "datatype"]),
    # JSON data
    "too few elements": (_json(_with(data=[1, 2, 3])), ["'x'", "3 data elements", "4 elements"]),
    "too many nested elements": (
        _json(_with(data=[[1, 2, 3], [4, 5, 6]])),
        ["'x'", "nested at depth 1", "lists of 2", "[2, 2]"],
    ),
    "no data": (_json({k: v for k, v in X.items() if k != "data"}), ["'x'", "neither 'data'", "binary_data_size"]),
    "strings for FP32": (_json(_with(data=["1", "2", "3", "4"])), ["'x'", "FP32", "numbers"]),
    "null for FP32": (_json(_with(data=[1, 2, None, 4])), ["'x'", "numbers"]),
    "bools for FP32": (_json(_with(data=[True, False, True, False])), ["'x'", "numbers"]),
    "floats for INT32": (_json(_with(datatype="INT32", data=[1, 2.5, 3, 4])), ["'x'", "INT32", "integers"]),
    "numbers for BOOL": (_json(_with(datatype="BOOL", data=[1, 0, 1, 0])), ["'x'", "BOOL", "true/false"]),
    "numbers for BYTES": (_json(_with(datatype="BYTES", data=[1, 2, 3, 4])), ["'x'", "BYTES", "strings"]),
    "UINT8 above range": (_json(_with(datatype="UINT8", data=[0, 1, 2, 256])), ["'x'", "UINT8 range"]),
    "UINT64 negative": (_json(_with(datatype="UINT64", data=[0, 1, 2, -1])), ["'x'", "UINT64 range"]),
    "INT8 below range": (_json(_with(datatype="INT8", data=[-129, 0, 0, 0])), ["'x'", "INT8 range"]),
    "INT64 above range": (_json(_with(datatype="INT64", data=[2**63, 0, 0, 0])), ["'x'", "INT64 range"]),
    # binary sizes
    "binary size short of the shape": (_binary(12, b"\0" * 12), ["'x'", "12 bytes", "FP32 need 16"]),
    "binary size over the shape": (_binary(20, b"\0" * 20), ["'x'", "20 bytes", "need 16"]),
    "binary size past the end": (
        _binary(16, b"\0" * 10),
        ["'x'", "binary_data_size 16", "past the end", "10 bytes left"],
    ),
    "trailing bytes": (_binary(16, b"\0" * 19), ["add up to 16 bytes", "19 bytes follow"]),
    "binary data without binary inputs": (
        (json_body([X]) + b"\0\0\0\0", len(json_body([X]))),
        ["add up to 0 bytes", "4 bytes follow"],
    ),
    "negative binary size": (_binary(-4, b""), ["'x'", "binary_data_size", "-4"]),
    "string binary size": (_binary("16", b"\0" * 16), ["'x'", "binary_data_size", "'16'"]),
    "BYTES truncated length prefix": (
        _binary(6, b"\x01\0\0\0a\x02", datatype="BYTES", shape=[2]),
        ["'x'", "element 1", "truncated"],
    ),
    "BYTES element past its data": (
        _binary(7, b"\x05\0\0\0abc", datatype="BYTES", shape=[1]),
        ["'x'", "element 0", "longer"],
    ),
    "BYTES count short of the shape": (
        _binary(6, b"\x02\0\0\0ab", datatype="BYTES", shape=[2]),
        ["'x'", "1 BYTES elements", "2 elements"],
    ),
    # the header length
    "header length larger than the body": (
        (json_body([X]), 10_000),
        ["Inference-Header-Content-Length is 10000", f"{len(json_body([X]))} bytes"],
    ),
    "negative header length": ((json_body([X]), -1), ["Inference-Header-Content-Length is -1"]),
    "header length cutting the JSON": ((json_body([X]), 10), ["not valid JSON"]),
    # outputs
    "outputs not a list": (_json(X, outputs={"name": "y"}), ["'outputs'"]),
    "output without a name": (_json(X, outputs=[{"binary_data": True}]), ["'name'"]),
    "output name not a string": (_json(X, outputs=[{"name": 3}]), ["'name'"]),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_request_is_a_protocol_error(case):
    (body, header_length), fragments = MALFORMED[case]
    with pytest.raises(ProtocolError) as raised:
        decode_request(body, header_length)
    message = str(raised.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


# Odd requests that once escaped as other exceptions (the HTTP layer would answer 500).
ODD_REQUESTS = {
    "input parameters not an object": _json(_with(parameters=["binary_data_size", 16])),
    "request parameters not an object": _json(X, parameters=["binary_data_output"]),
    "output parameters not an object": _json(X, outputs=[{"name": "y", "parameters": "binary_data"}]),
    "integer too large for a float": _json(_with(data=[1, 2, 3, 10**400])),
    "element count overflowing int64": _json(_with(shape=[2**40, 2**40], data=[])),
    "boolean binary_data_size": _binary(True, b"\x01", datatype="UINT8", shape=[1]),
}


@pytest.mark.parametrize("case", list(ODD_REQUESTS))
def test_malformed_request_found_broken_is_a_protocol_error(case):
    body, header_length = ODD_REQUESTS[case]
    with pytest.raises(ProtocolError) as raised:
        decode_request(body, header_length)
    assert "'x'" in str(raised.value) or "parameters" in str(raised.value) or "output" in str(raised.value)
