"""server/onnxport/serving/protocol.py: the V2 wire format as pure functions (no Flask, no model).

Requests are written here by hand from the protocol text (KServe V2 / Triton binary tensor
extension), decoded with decode_request, and answered with encode_response; binary responses are
split by the Inference-Header-Content-Length the encoder returns.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from onnxport.serving.protocol import (
    ProtocolError,
    decode_request,
    encode_response,
    to_binary,
    to_json_data,
)

# One sample per V2 datatype, with each type's extremes where it has them. FP16 values are
# exactly representable, so JSON (which carries decimal text) round-trips them exactly too.
SAMPLES = {
    "BOOL": ([True, False, True, True], np.bool_),
    "UINT8": ([0, 1, 200, 255], np.uint8),
    "UINT16": ([0, 1, 40000, 65535], np.uint16),
    "UINT32": ([0, 1, 3_000_000_000, 2**32 - 1], np.uint32),
    "UINT64": ([0, 1, 2**63, 2**64 - 1], np.uint64),
    "INT8": ([-128, -1, 0, 127], np.int8),
    "INT16": ([-32768, -1, 0, 32767], np.int16),
    "INT32": ([-(2**31), -1, 0, 2**31 - 1], np.int32),
    "INT64": ([-(2**63), -1, 0, 2**63 - 1], np.int64),
    "FP16": ([-2.5, 0.0, 0.0009765625, 65504.0], np.float16),
    "FP32": ([-1.5, 0.0, 3.4028234663852886e38, 1.1754943508222875e-38], np.float32),
    "FP64": ([-1e300, 0.0, 5e-324, 0.1], np.float64),
    "BYTES": (["", "ab", "héllo", "x" * 300], object),
}


def expected_array(datatype: str, shape: list[int]) -> np.ndarray:
    values, dtype = SAMPLES[datatype]
    if datatype == "BYTES":
        return np.array([v.encode() for v in values], dtype=object).reshape(shape)
    return np.array(values, dtype=dtype).reshape(shape)


def json_body(inputs: list[dict], **extra) -> bytes:
    return json.dumps({"inputs": inputs, **extra}).encode()


def raw_bytes(datatype: str, value: np.ndarray) -> bytes:
    """The binary tensor extension's encoding, written out by hand."""
    if datatype == "BYTES":
        return b"".join(struct.pack("<I", len(item)) + item for item in value.reshape(-1))
    return value.astype(value.dtype.newbyteorder("<")).tobytes()


def binary_body(inputs: list[tuple[str, str, list[int], bytes]], **extra) -> tuple[bytes, int]:
    """(body, header length) for inputs given as (name, datatype, shape, raw bytes)."""
    header = json.dumps({
        "inputs": [
            {"name": name, "datatype": datatype, "shape": shape, "parameters": {"binary_data_size": len(raw)}}
            for name, datatype, shape, raw in inputs
        ],
        **extra,
    }).encode()
    return header + b"".join(raw for *_, raw in inputs), len(header)


def split_response(body: bytes, header_length: int | None) -> tuple[dict, bytes]:
    if header_length is None:
        return json.loads(body), b""
    return json.loads(body[:header_length]), body[header_length:]


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype == object:
        assert actual.tolist() == expected.tolist()
    else:
        np.testing.assert_array_equal(actual, expected)


# --------------------------------------------------------------------------- JSON data layout


def test_flat_and_nested_json_data_decode_to_the_same_row_major_array():
    flat = decode_request(json_body([{"name": "x", "shape": [2, 3], "datatype": "INT32", "data": [1, 2, 3, 4, 5, 6]}]), None)
    nested = decode_request(json_body([{"name": "x", "shape": [2, 3], "datatype": "INT32", "data": [[1, 2, 3], [4, 5, 6]]}]), None)
    expected = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    assert_same(flat.inputs["x"], expected)
    assert_same(nested.inputs["x"], expected)


def test_deeply_nested_json_data_is_row_major():
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    request = decode_request(json_body([{"name": "x", "shape": [2, 3, 4], "datatype": "FP32", "data": data.tolist()}]), None)
    assert_same(request.inputs["x"], data)


def test_several_inputs_keep_their_names():
    request = decode_request(json_body([
        {"name": "a", "shape": [1], "datatype": "INT64", "data": [7]},
        {"name": "b", "shape": [2], "datatype": "FP64", "data": [0.5, 1.5]},
    ]), None)
    assert list(request.inputs) == ["a", "b"]
    assert_same(request.inputs["a"], np.array([7], dtype=np.int64))
    assert_same(request.inputs["b"], np.array([0.5, 1.5], dtype=np.float64))


# --------------------------------------------------------------------------- every datatype


@pytest.mark.parametrize("datatype", list(SAMPLES))
def test_json_round_trip(datatype):
    expected = expected_array(datatype, [2, 2])
    values, _ = SAMPLES[datatype]
    request = decode_request(json_body([{"name": "x", "shape": [2, 2], "datatype": datatype, "data": values}]), None)
    assert_same(request.inputs["x"], expected)

    body, header_length = encode_response("m", "fp32", request, {"y": request.inputs["x"]})
    assert header_length is None, "a JSON request without binary_data_output gets a JSON response"
    header, binary = split_response(body, header_length)
    assert binary == b""
    (output,) = header["outputs"]
    assert output == {"name": "y", "datatype": datatype, "shape": [2, 2], "data": values}


@pytest.mark.parametrize("datatype", list(SAMPLES))
def test_binary_round_trip(datatype):
    expected = expected_array(datatype, [2, 2])
    raw = raw_bytes(datatype, expected)
    body, header_length = binary_body([("x", datatype, [2, 2], raw)], parameters={"binary_data_output": True})
    request = decode_request(body, header_length)
    assert_same(request.inputs["x"], expected)
    assert to_binary(request.inputs["x"]) == raw

    body, header_length = encode_response("m", "fp32", request, {"y": request.inputs["x"]})
    assert header_length is not None
    header, binary = split_response(body, header_length)
    (output,) = header["outputs"]
    assert output == {"name": "y", "datatype": datatype, "shape": [2, 2], "parameters": {"binary_data_size": len(raw)}}
    assert binary == raw


def test_bytes_binary_elements_are_length_prefixed_little_endian():
    value = np.array([b"ab", b"", b"xyz"], dtype=object)
    assert to_binary(value) == b"\x02\x00\x00\x00ab" + b"\x00\x00\x00\x00" + b"\x03\x00\x00\x00xyz"
    raw = b"\x02\x00\x00\x00ab\x00\x00\x00\x00\x03\x00\x00\x00xyz"
    request = decode_request(*binary_body([("s", "BYTES", [3], raw)]))
    assert request.inputs["s"].tolist() == [b"ab", b"", b"xyz"]


def test_bytes_elements_may_hold_any_bytes_in_binary():
    items = [b"\x00\xff\xfe", "ünïcode".encode(), b"\x00" * 70000]
    raw = b"".join(struct.pack("<I", len(i)) + i for i in items)
    request = decode_request(*binary_body([("s", "BYTES", [1, 3], raw)]))
    assert request.inputs["s"].reshape(-1).tolist() == items


def test_numbers_are_little_endian_in_binary():
    raw = struct.pack("<iI", -2, 3)
    request = decode_request(*binary_body([("a", "INT32", [1], raw[:4]), ("b", "UINT32", [1], raw[4:])]))
    assert request.inputs["a"].tolist() == [-2]
    assert request.inputs["b"].tolist() == [3]
    assert to_binary(np.array([1], dtype=np.int32)) == b"\x01\x00\x00\x00"
    assert to_binary(np.array([1.0], dtype=np.float64)) == struct.pack("<d", 1.0)


def test_json_and_binary_inputs_mix_in_one_request():
    floats = np.array([1.5, -2.0], dtype=np.float32)
    header = json.dumps({"inputs": [
        {"name": "j", "shape": [2], "datatype": "INT16", "data": [3, 4]},
        {"name": "b", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
    ]}).encode()
    request = decode_request(header + floats.tobytes(), len(header))
    assert_same(request.inputs["j"], np.array([3, 4], dtype=np.int16))
    assert_same(request.inputs["b"], floats)


def test_nan_and_infinity_are_null_in_json_and_exact_in_binary():
    value = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=np.float32)
    assert to_json_data(value) == [None, None, None, 1.5]
    assert to_binary(value) == value.tobytes()


# --------------------------------------------------------------------------- id, outputs, binary choice


def test_the_request_id_is_echoed():
    request = decode_request(json_body([{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}], id="req-42"), None)
    assert request.id == "req-42"
    header, _ = split_response(*encode_response("m", "fp16", request, {"y": request.inputs["x"]}))
    assert header["id"] == "req-42"
    assert header["model_name"] == "m" and header["model_version"] == "fp16"


def test_no_id_in_the_response_without_one_in_the_request():
    request = decode_request(json_body([{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}]), None)
    assert request.id is None
    header, _ = split_response(*encode_response("m", "fp32", request, {"y": request.inputs["x"]}))
    assert "id" not in header


def test_requested_outputs_are_read_in_order():
    request = decode_request(json_body(
        [{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}],
        outputs=[{"name": "second"}, {"name": "first"}],
    ), None)
    assert request.outputs == ["second", "first"]


def test_all_outputs_without_an_outputs_list():
    request = decode_request(json_body([{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}]), None)
    assert request.outputs is None


def test_outputs_are_json_by_default():
    request = decode_request(json_body([{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}]), None)
    body, header_length = encode_response("m", "fp32", request, {"a": np.array([1], np.int8), "b": np.array([2.5], np.float32)})
    assert header_length is None
    header = json.loads(body)
    assert [o["data"] for o in header["outputs"]] == [[1], [2.5]]


def test_binary_data_output_makes_every_output_binary():
    request = decode_request(json_body(
        [{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}], parameters={"binary_data_output": True},
    ), None)
    a, b = np.array([1, 2], np.int64), np.array([[2.5]], np.float32)
    header, binary = split_response(*encode_response("m", "fp32", request, {"a": a, "b": b}))
    assert [o["parameters"]["binary_data_size"] for o in header["outputs"]] == [16, 4]
    assert all("data" not in o for o in header["outputs"])
    assert binary == a.tobytes() + b.tobytes()


def test_per_output_binary_data_overrides_the_default_both_ways():
    inputs = [{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}]
    a, b = np.array([1, 2], np.int64), np.array([[2.5]], np.float32)

    # Default binary, one output asks for JSON.
    request = decode_request(json_body(
        inputs, parameters={"binary_data_output": True},
        outputs=[{"name": "a", "parameters": {"binary_data": False}}, {"name": "b"}],
    ), None)
    header, binary = split_response(*encode_response("m", "fp32", request, {"a": a, "b": b}))
    assert header["outputs"][0]["data"] == [1, 2]
    assert header["outputs"][1]["parameters"] == {"binary_data_size": 4}
    assert binary == b.tobytes()

    # Default JSON, one output asks for binary.
    request = decode_request(json_body(
        inputs, outputs=[{"name": "a", "parameters": {"binary_data": True}}, {"name": "b"}],
    ), None)
    header, binary = split_response(*encode_response("m", "fp32", request, {"a": a, "b": b}))
    assert header["outputs"][0]["parameters"] == {"binary_data_size": 16}
    assert header["outputs"][1]["data"] == [2.5]
    assert binary == a.tobytes()


def test_the_returned_header_length_is_the_json_header():
    request = decode_request(json_body(
        [{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}], parameters={"binary_data_output": True},
    ), None)
    body, header_length = encode_response("m", "fp32", request, {"a": np.array([7], np.int32)})
    assert json.loads(body[:header_length])["outputs"][0]["name"] == "a"
    assert body[header_length:] == b"\x07\x00\x00\x00"


# --------------------------------------------------------------------------- malformed requests

X = {"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]}


def _with(**changes) -> dict:
    return {**X, **changes}


def _json(*inputs, **extra) -> tuple[bytes, None]:
    return json_body(list(inputs), **extra), None


def _binary_header(size, datatype="FP32", shape=(2, 2), name="x") -> bytes:
    return json.dumps({"inputs": [
        {"name": name, "shape": list(shape), "datatype": datatype, "parameters": {"binary_data_size": size}}
    ]}).encode()


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
    "too many nested elements": (_json(_with(data=[[1, 2, 3], [4, 5, 6]])), ["'x'", "6 data elements", "[2, 2]"]),
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
    "binary size past the end": (_binary(16, b"\0" * 10), ["'x'", "binary_data_size 16", "past the end", "10 bytes left"]),
    "trailing bytes": (_binary(16, b"\0" * 19), ["add up to 16 bytes", "19 bytes follow"]),
    "binary data without binary inputs": (
        (json_body([X]) + b"\0\0\0\0", len(json_body([X]))), ["add up to 0 bytes", "4 bytes follow"]),
    "negative binary size": (_binary(-4, b""), ["'x'", "binary_data_size", "-4"]),
    "string binary size": (_binary("16", b"\0" * 16), ["'x'", "binary_data_size", "'16'"]),
    "BYTES truncated length prefix": (_binary(6, b"\x01\0\0\0a\x02", datatype="BYTES", shape=[2]), ["'x'", "element 1", "truncated"]),
    "BYTES element past its data": (_binary(7, b"\x05\0\0\0abc", datatype="BYTES", shape=[1]), ["'x'", "element 0", "longer"]),
    "BYTES count short of the shape": (_binary(6, b"\x02\0\0\0ab", datatype="BYTES", shape=[2]), ["'x'", "1 BYTES elements", "2 elements"]),
    # the header length
    "header length larger than the body": ((json_body([X]), 10_000), ["Inference-Header-Content-Length is 10000", f"{len(json_body([X]))} bytes"]),
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


@pytest.mark.parametrize(
    "case", list(ODD_REQUESTS)
)
def test_malformed_request_found_broken_is_a_protocol_error(case):
    body, header_length = ODD_REQUESTS[case]
    with pytest.raises(ProtocolError) as raised:
        decode_request(body, header_length)
    assert "'x'" in str(raised.value) or "parameters" in str(raised.value) or "output" in str(raised.value)
