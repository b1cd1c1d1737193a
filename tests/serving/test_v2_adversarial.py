"""The hostile requests that once got a 500 or a 200: each is now a 400 with {"error": ...} naming the field.

One test per class found by fuzzing `onnxport serve` (10,000 requests): a RecursionError, a TypeError, a
UnicodeEncodeError or onnxruntime's INVALID_ARGUMENT used to come back as 500, and malformed requests
whose element count happened to be right were answered 200.
"""

from __future__ import annotations

import json

import pytest
from v2_helpers import infer_url, iris_request, post_json


@pytest.fixture
def client(demo_app):
    return demo_app.test_client()


def iris(**changes) -> dict:
    body = iris_request()
    body["inputs"][0].update(changes)
    return body


def minilm(ids: list[list[int]], mask_shape: list[int] | None = None) -> dict:
    rows, columns = len(ids), len(ids[0])
    mask_shape = mask_shape or [rows, columns]
    return {
        "inputs": [
            {"name": "input_ids", "shape": [rows, columns], "datatype": "INT64", "data": ids},
            {
                "name": "attention_mask",
                "shape": mask_shape,
                "datatype": "INT64",
                "data": [1] * (mask_shape[0] * mask_shape[1]),
            },
        ]
    }


# --------------------------------------------------------------------------- once a 500


def test_json_nested_deeper_than_the_decoder_goes(client, assert_json_error):
    body = b'{"inputs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert_json_error(post_json(client, infer_url("iris"), body), 400, "nested too deeply", "more than 6 levels")


@pytest.mark.parametrize("datatype", [["FP32"], {"FP32": 1}, 32, None])
def test_datatype_that_is_not_a_string(client, assert_json_error, datatype):
    assert_json_error(
        post_json(client, infer_url("iris"), iris(datatype=datatype)), 400, "input 'features'", "'datatype'", "FP32"
    )


def test_bytes_data_with_a_lone_surrogate(client, assert_json_error):
    body = json.dumps(iris(datatype="BYTES", shape=[1], data=["\ud800"]))  # json.dumps escapes it: \ud800
    assert_json_error(post_json(client, infer_url("iris"), body), 400, "'features'", "element 0", "not valid Unicode")


def test_input_name_with_a_lone_surrogate(client, assert_json_error):
    assert_json_error(
        post_json(client, infer_url("iris"), json.dumps(iris(name="x\udfff"))),
        400,
        "inputs[0].name",
        "not valid Unicode",
    )


def test_token_id_past_the_vocabulary(client, assert_json_error):
    message = assert_json_error(
        post_json(client, infer_url("minilm"), minilm([[101, 2147483648, 102]])),
        400,
        "'input_ids' [1, 3]",
        "cannot run on these inputs",
        "2147483648",
        "[-30522,30521]",
    )
    assert "ONNXRuntimeError" not in message


def test_inputs_whose_dimensions_do_not_fit_together(client, assert_json_error):
    body = minilm([[101]] * 8, mask_shape=[1, 8])  # input_ids [8, 1], attention_mask [1, 8]
    # Refused before onnxruntime: the two share the model's named dimensions batch and sequence.
    assert_json_error(
        post_json(client, infer_url("minilm", "fp16"), body),
        400,
        "'input_ids'",
        "'attention_mask'",
        "disagree",
        "'batch'",
        "8 on axis 0",
        "1 on axis 0",
    )


def test_a_sequence_longer_than_the_position_table(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("minilm"), minilm([[101] * 600])), 400, "'input_ids' [1, 600]")


# --------------------------------------------------------------------------- once a 200


@pytest.mark.parametrize(
    "data, fragments",
    [
        ([[5.1, 3.5, 1.4], [0.2]], ["'features'", "depth 0", "lists of 1", "a list of 2"]),  # ragged, 4 in all
        ([[5.1], [3.5], [1.4], [0.2]], ["'features'", "depth 0", "lists of 1"]),  # every element in its own list
        ([[[5.1, 3.5, 1.4, 0.2]]], ["'features'", "depth 1", "lists of 4", "a list of 1"]),
        ([[5.1, 3.5, 1.4, [0.2]]], ["'features'", "nested deeper than its shape"]),
        ([[5.1, 3.5], 1.4, 0.2], ["'features'", "depth 0", "lists of 1"]),
        (5.1, ["'features'", "'data' must be a list", "float"]),
    ],
)
def test_data_not_nested_as_its_shape(client, assert_json_error, data, fragments):
    assert_json_error(post_json(client, infer_url("iris"), iris(data=data)), 400, *fragments)


def test_flat_and_exactly_nested_data_are_both_fine(client):
    flat = post_json(client, infer_url("iris"), iris(data=[5.1, 3.5, 1.4, 0.2]))
    nested = post_json(client, infer_url("iris"), iris(data=[[5.1, 3.5, 1.4, 0.2]]))
    assert flat.status_code == nested.status_code == 200
    assert flat.json["outputs"] == nested.json["outputs"]


@pytest.mark.parametrize("request_id", [1.5, {"$ne": 1}, ["a"], 7, True])
def test_id_that_is_not_a_string(client, assert_json_error, request_id):
    assert_json_error(post_json(client, infer_url("iris"), iris_request(id=request_id)), 400, "field 'id'", "string")


def test_binary_data_that_is_not_a_boolean(client, assert_json_error):
    body = iris_request(outputs=[{"name": "label", "parameters": {"binary_data": "yes"}}])
    assert_json_error(post_json(client, infer_url("iris"), body), 400, "output 'label'", "binary_data", "'yes'")
    body = iris_request(parameters={"binary_data_output": 1})
    assert_json_error(post_json(client, infer_url("iris"), body), 400, "binary_data_output", "boolean")


def test_data_and_binary_data_size_on_one_input(client, assert_json_error):
    header = json.dumps(iris(parameters={"binary_data_size": 16})).encode()
    response = client.post(
        infer_url("iris"),
        data=header + b"\0" * 16,
        content_type="application/octet-stream",
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert_json_error(response, 400, "'features'", "both 'data' and a binary_data_size")


@pytest.mark.parametrize(
    "parameters, fragments",
    [
        (
            {"shared_memory_region": "region0", "shared_memory_byte_size": 16},
            ["shared-memory extension", "not supported"],
        ),
        ({"classification": 3}, ["classification extension", "not supported"]),
        ({"binary_data_sise": 16}, ["unknown field", "binary_data_size"]),
    ],
)
def test_parameters_we_do_not_act_on(client, assert_json_error, parameters, fragments):
    assert_json_error(post_json(client, infer_url("iris"), iris(parameters=parameters)), 400, "'features'", *fragments)


def test_unknown_fields(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), iris_request(inputz=[])), 400, "'inputz'", "unknown field")
    assert_json_error(
        post_json(client, infer_url("iris"), iris(contents={"fp32_contents": [1]})),
        400,
        "'features'",
        "'contents'",
        "allowed here: name, shape, datatype, parameters, data",
    )


def test_an_output_requested_twice(client, assert_json_error):
    body = iris_request(outputs=[{"name": "label"}, {"name": "label"}])
    assert_json_error(post_json(client, infer_url("iris"), body), 400, "'label'", "twice")
