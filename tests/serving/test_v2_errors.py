"""V2 requests the server refuses, each with its status and one {"error": ...} naming the mistake, and never a 500."""

from __future__ import annotations

import gzip
import json

import pytest
from v2_helpers import JSON, infer_url, iris_request, post_json

from onnxport.serving.app import create_app


@pytest.fixture
def client(demo_app):
    return demo_app.test_client()


def features(**changes) -> dict:
    return {
        "inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [1.0, 2.0, 3.0, 4.0], **changes}]
    }


def test_malformed_json(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), b'{"inputs": [{"name": '), 400, "not valid JSON")


def test_body_without_inputs(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), {"outputs": []}), 400, "'inputs'")


def test_unknown_input(client, assert_json_error):
    response = post_json(client, infer_url("iris"), features(name="sepal"))
    assert_json_error(response, 400, "unknown input 'sepal'", "features")


def test_missing_input(client, assert_json_error):
    body = {"inputs": [{"name": "input_ids", "shape": [1, 3], "datatype": "INT64", "data": [101, 7592, 102]}]}
    assert_json_error(post_json(client, infer_url("minilm"), body), 400, "missing input 'attention_mask'", "INT64")


def test_wrong_datatype(client, assert_json_error):
    assert_json_error(
        post_json(client, infer_url("iris"), features(datatype="FP64")), 400, "'features'", "FP64", "expects FP32"
    )


def test_wrong_datatype_of_an_integer_input(client, assert_json_error):
    body = {
        "inputs": [
            {"name": "input_ids", "shape": [1, 1], "datatype": "INT32", "data": [101]},
            {"name": "attention_mask", "shape": [1, 1], "datatype": "INT64", "data": [1]},
        ]
    }
    response = post_json(client, infer_url("minilm", "int8-static"), body)
    assert_json_error(response, 400, "'input_ids'", "INT32", "expects INT64")


def test_wrong_rank(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris"), features(shape=[4])), 400, "'features'", "[4]", "[-1, 4]")


def test_wrong_fixed_dimension(client, assert_json_error):
    body = features(shape=[1, 5], data=[1.0] * 5)
    assert_json_error(post_json(client, infer_url("iris"), body), 400, "'features'", "[1, 5]", "[-1, 4]")
    pixels = {"inputs": [{"name": "pixels", "shape": [1, 1, 8, 7], "datatype": "FP32", "data": [0.0] * 56}]}
    assert_json_error(post_json(client, infer_url("digits", "fp16"), pixels), 400, "'pixels'", "[-1, 1, 8, 8]")


def test_empty_batch(client, assert_json_error):
    response = post_json(client, infer_url("iris"), features(shape=[0, 4], data=[]))
    assert_json_error(response, 400, "'features'", "no elements")


def test_element_count_mismatch(client, assert_json_error):
    assert_json_error(
        post_json(client, infer_url("iris"), features(data=[1.0, 2.0, 3.0])),
        400,
        "'features'",
        "3 data elements",
        "4 elements",
    )


def binary_features(size: int, payload: bytes, header_length_delta: int = 0):
    header = json.dumps(
        {
            "inputs": [
                {"name": "features", "shape": [2, 4], "datatype": "FP32", "parameters": {"binary_data_size": size}}
            ]
        }
    ).encode()
    return header + payload, str(len(header) + header_length_delta)


@pytest.mark.parametrize(
    "size, payload, fragments",
    [
        (30, b"\0" * 30, ["'features'", "30 bytes", "need 32"]),
        (32, b"\0" * 16, ["'features'", "past the end", "16 bytes left"]),
        (32, b"\0" * 40, ["add up to 32 bytes", "40 bytes follow"]),
    ],
)
def test_binary_sizes_that_do_not_add_up(client, assert_json_error, size, payload, fragments):
    body, length = binary_features(size, payload)
    response = client.post(
        infer_url("iris"),
        data=body,
        content_type="application/octet-stream",
        headers={"Inference-Header-Content-Length": length},
    )
    assert_json_error(response, 400, *fragments)


@pytest.mark.parametrize(
    "value, fragments",
    [
        ("twelve", ["Inference-Header-Content-Length", "'twelve'"]),
        ("99999", ["Inference-Header-Content-Length is 99999"]),
        ("-5", ["Inference-Header-Content-Length", "decimal number", "'-5'"]),
        ("+111", ["Inference-Header-Content-Length", "'+111'"]),
        ("20", ["not valid JSON"]),
    ],
)
def test_bad_inference_header_content_length(client, assert_json_error, value, fragments):
    body, _ = binary_features(32, b"\0" * 32)
    response = client.post(
        infer_url("iris"),
        data=body,
        content_type="application/octet-stream",
        headers={"Inference-Header-Content-Length": value},
    )
    assert_json_error(response, 400, *fragments)


def test_unknown_model(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("resnet"), iris_request()), 404, "unknown model 'resnet'", "iris")


def test_unknown_version(client, assert_json_error):
    assert_json_error(post_json(client, infer_url("iris", "int4"), iris_request()), 404, "'int4'", "fp32")


def test_unknown_output(client, assert_json_error):
    assert_json_error(
        post_json(client, infer_url("iris"), iris_request(outputs=[{"name": "logits"}])),
        400,
        "unknown output 'logits'",
        "label",
        "probabilities",
    )


def test_body_over_max_request_bytes(demo_repository, assert_json_error):
    client = create_app({"repository": demo_repository, "max_request_bytes": 1000}).test_client()
    assert post_json(client, infer_url("iris"), iris_request()).status_code == 200  # small is fine
    big = features(shape=[100, 4], data=[1.0] * 400)
    assert len(json.dumps(big)) > 1000
    assert_json_error(post_json(client, infer_url("iris"), big), 413, "too large")


def test_compressed_body_over_max_request_bytes(demo_repository, assert_json_error):
    client = create_app({"repository": demo_repository, "max_request_bytes": 1000}).test_client()
    big = gzip.compress(json.dumps(features(shape=[100, 4], data=[1.0] * 400)).encode())
    assert len(big) < 1000
    response = client.post(infer_url("iris"), data=big, content_type=JSON, headers={"Content-Encoding": "gzip"})
    assert_json_error(response, 413, "1000")


def test_get_on_infer(client, assert_json_error):
    response = client.get(infer_url("iris"))
    assert_json_error(response, 405, "POST")
    assert "POST" in response.headers["Allow"]


def test_text_plain(client, assert_json_error):
    response = client.post(infer_url("iris"), data=json.dumps(iris_request()), content_type="text/plain")
    assert_json_error(response, 415, "'text/plain'", "application/json")


def test_unknown_content_encoding(client, assert_json_error):
    response = client.post(
        infer_url("iris"), data=json.dumps(iris_request()), content_type=JSON, headers={"Content-Encoding": "br"}
    )
    assert_json_error(response, 415, "'br'")


def test_corrupt_gzip_body(client, assert_json_error):
    response = client.post(
        infer_url("iris"), data=b"not gzip at all", content_type=JSON, headers={"Content-Encoding": "gzip"}
    )
    assert_json_error(response, 400, "gzip")


def test_unknown_api_path(client, assert_json_error):
    assert_json_error(client.get("/v2/nothing/here"), 404)


def test_rejected_variant_is_not_served(repository_copy, replace_manifest, assert_json_error):
    repository = repository_copy(["iris"])
    manifest = json.loads((repository / "manifest.json").read_text())
    reason = "top-1 agreement 0.5000 < 0.99 (test)"
    manifest["models"]["iris"]["variants"]["fp16"].update(status="rejected", reason=reason)
    replace_manifest(repository, manifest)
    client = create_app({"repository": repository}).test_client()

    assert_json_error(
        post_json(client, infer_url("iris", "fp16"), iris_request()), 404, "'fp16'", "'iris'", "rejected", reason
    )
    assert_json_error(client.get("/v2/models/iris/versions/fp16"), 404, "rejected", reason)
    assert_json_error(client.get("/v2/models/iris/versions/fp16/ready"), 404, "rejected")
    assert client.get("/v2/models/iris").json["versions"] == ["fp32"]
    assert post_json(client, infer_url("iris", "fp32"), iris_request()).status_code == 200
    # A skipped variant (iris int8: not smaller than fp32) is not served either, and says why.
    assert_json_error(client.get("/v2/models/iris/versions/int8-static"), 404, "skipped", "1.5x smaller")


def test_served_versions_put_fp32_first_whatever_the_manifest_order(repository_copy, replace_manifest):
    repository = repository_copy(["digits"])
    manifest = json.loads((repository / "manifest.json").read_text())
    variants = manifest["models"]["digits"]["variants"]
    manifest["models"]["digits"]["variants"] = {k: variants[k] for k in ["int8-static", "fp16", "fp32", "int8-dynamic"]}
    (repository / "manifest.json").write_text(json.dumps(manifest))  # not sorted, unlike a build's
    client = create_app({"repository": repository}).test_client()
    assert client.get("/v2/models/digits").json["versions"] == ["fp32", "fp16", "int8-dynamic", "int8-static"]


# Client mistakes must never be a 500, however odd the request.
CLIENT_MISTAKES = {
    "inputs is an object": {"inputs": {"features": [1, 2, 3, 4]}},
    "input is a string": {"inputs": ["features"]},
    "data is an object": features(data={"a": 1}),
    "shape of strings": features(shape=["1", "4"]),
    "huge shape": features(shape=[10**12, 4]),
    "outputs of strings": iris_request(outputs=["label"]),
    "null body": None,
    "input parameters a list": features(parameters=["binary_data_size"]),
    "request parameters a list": iris_request(parameters=["binary_data_output"]),
    "output parameters a string": iris_request(outputs=[{"name": "label", "parameters": "binary_data"}]),
    "integer beyond the float range": features(data=[1, 2, 3, 10**400]),
    "element count overflowing int64": features(shape=[2**40, 2**40], data=[]),
}


@pytest.mark.parametrize("case", list(CLIENT_MISTAKES))
def test_client_mistake_is_a_400(client, assert_json_error, case):
    body = CLIENT_MISTAKES[case]
    assert_json_error(post_json(client, infer_url("iris"), json.dumps(body)), 400)
