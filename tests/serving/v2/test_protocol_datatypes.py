"""serving/v2/protocol.py's tensor data: JSON layouts, and every V2 datatype both ways, in JSON and in binary."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from protocol_helpers import json_body, split_response

from onnxport.serving.v2.protocol import decode_request, encode_response, to_binary, to_json_data

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


def raw_bytes(datatype: str, value: np.ndarray) -> bytes:
    """The binary tensor extension's encoding, written out by hand."""
    if datatype == "BYTES":
        return b"".join(struct.pack("<I", len(item)) + item for item in value.reshape(-1))
    return value.astype(value.dtype.newbyteorder("<")).tobytes()


def binary_body(inputs: list[tuple[str, str, list[int], bytes]], **extra) -> tuple[bytes, int]:
    """(body, header length) for inputs given as (name, datatype, shape, raw bytes)."""
    header = json.dumps(
        {
            "inputs": [
                {"name": name, "datatype": datatype, "shape": shape, "parameters": {"binary_data_size": len(raw)}}
                for name, datatype, shape, raw in inputs
            ],
            **extra,
        }
    ).encode()
    return header + b"".join(raw for *_, raw in inputs), len(header)


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype == object:
        assert actual.tolist() == expected.tolist()
    else:
        np.testing.assert_array_equal(actual, expected)


# --------------------------------------------------------------------------- JSON data layout


def test_flat_and_nested_json_data_decode_to_the_same_row_major_array():
    x = {"name": "x", "shape": [2, 3], "datatype": "INT32"}
    flat = decode_request(json_body([{**x, "data": [1, 2, 3, 4, 5, 6]}]), None)
    nested = decode_request(json_body([{**x, "data": [[1, 2, 3], [4, 5, 6]]}]), None)
    expected = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    assert_same(flat.inputs["x"], expected)
    assert_same(nested.inputs["x"], expected)


def test_deeply_nested_json_data_is_row_major():
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    request = decode_request(
        json_body([{"name": "x", "shape": [2, 3, 4], "datatype": "FP32", "data": data.tolist()}]), None
    )
    assert_same(request.inputs["x"], data)


def test_several_inputs_keep_their_names():
    request = decode_request(
        json_body(
            [
                {"name": "a", "shape": [1], "datatype": "INT64", "data": [7]},
                {"name": "b", "shape": [2], "datatype": "FP64", "data": [0.5, 1.5]},
            ]
        ),
        None,
    )
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
    header = json.dumps(
        {
            "inputs": [
                {"name": "j", "shape": [2], "datatype": "INT16", "data": [3, 4]},
                {"name": "b", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
            ]
        }
    ).encode()
    request = decode_request(header + floats.tobytes(), len(header))
    assert_same(request.inputs["j"], np.array([3, 4], dtype=np.int16))
    assert_same(request.inputs["b"], floats)


def test_nan_and_infinity_are_null_in_json_and_exact_in_binary():
    value = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=np.float32)
    assert to_json_data(value) == [None, None, None, 1.5]
    assert to_binary(value) == value.tobytes()
