"""serving/v2/protocol.py's request id, requested outputs, and encode_response's choice of JSON or binary per output."""

from __future__ import annotations

import json

import numpy as np
from protocol_helpers import json_body, split_response

from onnxport.serving.v2.protocol import decode_request, encode_response


def test_the_request_id_is_echoed():
    request = decode_request(
        json_body([{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}], id="req-42"), None
    )
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
    request = decode_request(
        json_body(
            [{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}],
            outputs=[{"name": "second"}, {"name": "first"}],
        ),
        None,
    )
    assert request.outputs == ["second", "first"]


def test_all_outputs_without_an_outputs_list():
    request = decode_request(json_body([{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}]), None)
    assert request.outputs is None


def test_outputs_are_json_by_default():
    request = decode_request(json_body([{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}]), None)
    body, header_length = encode_response(
        "m", "fp32", request, {"a": np.array([1], np.int8), "b": np.array([2.5], np.float32)}
    )
    assert header_length is None
    header = json.loads(body)
    assert [o["data"] for o in header["outputs"]] == [[1], [2.5]]


def test_binary_data_output_makes_every_output_binary():
    request = decode_request(
        json_body(
            [{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}],
            parameters={"binary_data_output": True},
        ),
        None,
    )
    a, b = np.array([1, 2], np.int64), np.array([[2.5]], np.float32)
    header, binary = split_response(*encode_response("m", "fp32", request, {"a": a, "b": b}))
    assert [o["parameters"]["binary_data_size"] for o in header["outputs"]] == [16, 4]
    assert all("data" not in o for o in header["outputs"])
    assert binary == a.tobytes() + b.tobytes()


def test_per_output_binary_data_overrides_the_default_both_ways():
    inputs = [{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}]
    a, b = np.array([1, 2], np.int64), np.array([[2.5]], np.float32)

    # Default binary, one output asks for JSON.
    request = decode_request(
        json_body(
            inputs,
            parameters={"binary_data_output": True},
            outputs=[{"name": "a", "parameters": {"binary_data": False}}, {"name": "b"}],
        ),
        None,
    )
    header, binary = split_response(*encode_response("m", "fp32", request, {"a": a, "b": b}))
    assert header["outputs"][0]["data"] == [1, 2]
    assert header["outputs"][1]["parameters"] == {"binary_data_size": 4}
    assert binary == b.tobytes()

    # Default JSON, one output asks for binary.
    request = decode_request(
        json_body(
            inputs,
            outputs=[{"name": "a", "parameters": {"binary_data": True}}, {"name": "b"}],
        ),
        None,
    )
    header, binary = split_response(*encode_response("m", "fp32", request, {"a": a, "b": b}))
    assert header["outputs"][0]["parameters"] == {"binary_data_size": 16}
    assert header["outputs"][1]["data"] == [2.5]
    assert binary == a.tobytes()


def test_the_returned_header_length_is_the_json_header():
    request = decode_request(
        json_body(
            [{"name": "x", "shape": [1], "datatype": "INT8", "data": [1]}],
            parameters={"binary_data_output": True},
        ),
        None,
    )
    body, header_length = encode_response("m", "fp32", request, {"a": np.array([7], np.int32)})
    assert json.loads(body[:header_length])["outputs"][0]["name"] == "a"
    assert body[header_length:] == b"\x07\x00\x00\x00"
