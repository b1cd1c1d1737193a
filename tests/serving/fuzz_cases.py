"""Hostile V2 requests, generated from a seed: every one is invalid, and each class says why.

A case is (class, method, path, headers, body). The classes are what fuzzing `onnxport serve` found
(500s, invalid requests answered 200, non-JSON errors, memory growth) plus the plain mistakes
(unknown model, wrong method, bad Content-Type). The test interleaves valid requests of its own.
"""

from __future__ import annotations

import functools
import gzip
import json
import random
import zlib
from typing import Any

IRIS = {"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.9, 3.0, 5.1, 1.8]}
MINILM = [
    {"name": "input_ids", "shape": [1, 4], "datatype": "INT64", "data": [101, 7592, 2088, 102]},
    {"name": "attention_mask", "shape": [1, 4], "datatype": "INT64", "data": [1, 1, 1, 1]},
]
JSON_TYPE = {"Content-Type": "application/json"}
NOT_STRINGS = [1.5, {"$ne": 1}, ["a"], 7, True, None]
NOT_DATATYPES = [["FP32"], {"FP32": 1}, 32, None, True, "fp32", "FLOAT", "", "FP128"]
BAD_SHAPES = [[1, -4], [1.0, 4], ["1", 4], [[1], 4], [True, 4], "1,4", [1] * 40, [1, 4.5], {"0": 1}]
BAD_LENGTHS = ["+111", "-1", " 7", "1_0", "abc", "1e3", "0x10", "99999999", "", "\u00b2"]  # "²": str.isdigit says yes


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@functools.cache
def gzip_bomb() -> bytes:
    """1 GiB of zeros in about a megabyte."""
    compressor = zlib.compressobj(9, wbits=31)
    block = b"\0" * (1 << 24)
    return b"".join([*(compressor.compress(block) for _ in range(64)), compressor.flush()])


def _iris(**changes) -> dict:
    return {"inputs": [{**IRIS, **changes}]}


def _body(value: Any) -> bytes:
    return json.dumps(value).encode()


def case(rng: random.Random) -> tuple[str, str, str, dict[str, str], bytes]:
    """One invalid request: (class, method, path, headers, body)."""
    infer = rng.choice(
        ["/v2/models/iris/infer", "/v2/models/iris/versions/fp32/infer", "/v2/models/iris/versions/fp16/infer"]
    )
    kind = rng.choice(KINDS)
    if kind == "datatype not a datatype":
        return kind, "POST", infer, JSON_TYPE, _body(_iris(datatype=rng.choice(NOT_DATATYPES)))
    if kind == "id not a string":
        return kind, "POST", infer, JSON_TYPE, _body({**_iris(), "id": rng.choice(NOT_STRINGS[:-1])})
    if kind == "bad shape":
        return kind, "POST", infer, JSON_TYPE, _body(_iris(shape=rng.choice(BAD_SHAPES)))
    if kind == "data not as its shape":
        data = rng.choice(
            [
                [[5.9, 3.0, 5.1], [1.8]],
                [[5.9], [3.0], [5.1], [1.8]],
                [[[5.9, 3.0, 5.1, 1.8]]],
                [5.9, 3.0, 5.1],
                [5.9, "3", 5.1, 1.8],
                [5.9, None, 5.1, 1.8],
                5.9,
                {"0": 5.9},
                [5.9, 3.0, 5.1, [1.8]],
                [True, False, True, False],
            ]
        )
        return kind, "POST", infer, JSON_TYPE, _body(_iris(data=data))
    if kind == "bad parameters":
        parameters = rng.choice(
            [
                {"shared_memory_region": "r0", "shared_memory_byte_size": 16},
                {"classification": 2},
                {"binary_data_size": -4},
                {"binary_data_size": "16"},
                {"whatever": 1},
                [1],
                "x",
            ]
        )
        return kind, "POST", infer, JSON_TYPE, _body(_iris(parameters=parameters))
    if kind == "bad output request":
        outputs = rng.choice(
            [
                [{"name": "label", "parameters": {"binary_data": "yes"}}],
                [{"name": 3}],
                {"name": "label"},
                [{"name": "label"}, {"name": "label"}],
                [{"name": "nope"}],
                ["label"],
            ]
        )
        return kind, "POST", infer, JSON_TYPE, _body({**_iris(), "outputs": outputs})
    if kind == "bad envelope":
        body = rng.choice(
            [
                {},
                {"inputs": []},
                {"inputs": {"name": "x"}},
                [IRIS],
                {**_iris(), "inputz": 1},
                {**_iris(), "parameters": {"binary_data_output": "yes"}},
                "inputs",
                42,
                None,
            ]
        )
        return kind, "POST", infer, JSON_TYPE, _body(body)
    if kind == "deep nesting":
        depth = rng.choice([1000, 5000, 100_000])
        where = rng.choice(["data", "top", "id"])
        if where == "top":
            return kind, "POST", infer, JSON_TYPE, b"[" * depth + b"]" * depth
        body = _iris(data=_deep(min(depth, 900))) if where == "data" else {**_iris(), "id": _deep(min(depth, 900))}
        return kind, "POST", infer, JSON_TYPE, _body(body)
    if kind == "lone surrogate":
        body = rng.choice(
            [
                _iris(name="x\ud800"),
                _iris(datatype="BYTES", shape=[1], data=["\udfff"]),
                {**_iris(), "id": "a\ud800"},
                {**_iris(), "outputs": [{"name": "\ud800"}]},
            ]
        )
        return kind, "POST", infer, JSON_TYPE, _body(body)
    if kind == "not JSON":
        body = rng.choice(
            [
                b'{"inputs": [',
                b"\xff\xfe{}",
                bytes(rng.randrange(256) for _ in range(64)),
                b"",
                b"nan",
                b'{"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [NaN]]}',
            ]
        )
        return kind, "POST", infer, JSON_TYPE, body
    if kind == "bad header length":
        header = _body(
            {"inputs": [{**{k: v for k, v in IRIS.items() if k != "data"}, "parameters": {"binary_data_size": 16}}]}
        )
        headers = {
            "Content-Type": "application/octet-stream",
            "Inference-Header-Content-Length": rng.choice([*BAD_LENGTHS, str(len(header) + 5), "3"]),
        }
        return kind, "POST", infer, headers, header + b"\0" * 16
    if kind == "binary sizes that do not add up":
        size = rng.choice([12, 20, 64])
        header = _body(
            {"inputs": [{**{k: v for k, v in IRIS.items() if k != "data"}, "parameters": {"binary_data_size": size}}]}
        )
        headers = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(header))}
        return kind, "POST", infer, headers, header + b"\0" * rng.choice([16, size + 3])
    if kind == "data and binary_data_size":
        header = _body(_iris(parameters={"binary_data_size": 16}))
        headers = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(header))}
        return kind, "POST", infer, headers, header + b"\0" * 16
    if kind == "compression bomb or garbage":
        choice = rng.randrange(4)
        if choice == 0:
            return kind, "POST", infer, {**JSON_TYPE, "Content-Encoding": "gzip"}, gzip_bomb()
        if choice == 1:
            return kind, "POST", infer, {**JSON_TYPE, "Content-Encoding": "deflate"}, zlib.compress(_body(_iris()))[:-6]
        if choice == 2:
            return kind, "POST", infer, {**JSON_TYPE, "Content-Encoding": "gzip"}, b"not gzip"
        return kind, "POST", infer, {**JSON_TYPE, "Content-Encoding": "br"}, gzip.compress(_body(_iris()))
    if kind == "values the model cannot take":
        ids = rng.choice([[101, 2147483648, 102, 0], [101, -40000, 102, 0], [101, 9999999, 102, 0]])
        body = {"inputs": [{**MINILM[0], "data": ids}, MINILM[1]]}
        if rng.random() < 0.4:  # dimensions that do not fit together: [4, 1] against [1, 4]
            body = {"inputs": [{**MINILM[0], "shape": [4, 1]}, MINILM[1]]}
        return kind, "POST", "/v2/models/minilm/infer", JSON_TYPE, _body(body)
    if kind == "does not fit the model":
        body = rng.choice(
            [
                _iris(name="sepal"),
                _iris(datatype="FP64"),
                _iris(shape=[4], data=IRIS["data"]),
                _iris(shape=[1, 5], data=[1.0] * 5),
                _iris(shape=[0, 4], data=[]),
                {"inputs": [IRIS, IRIS]},
            ]
        )
        return kind, "POST", infer, JSON_TYPE, _body(body)
    if kind == "no such model or version":
        path = rng.choice(
            [
                "/v2/models/resnet/infer",
                "/v2/models/iris/versions/int4/infer",
                "/v2/models/iris/versions/int8-static/infer",
                "/v2/models/%00/infer",
            ]
        )
        return kind, "POST", path, JSON_TYPE, _body(_iris())
    if kind == "wrong method or type":
        if rng.random() < 0.5:
            return kind, rng.choice(["GET", "PUT", "DELETE", "PATCH"]), infer, JSON_TYPE, _body(_iris())
        return (
            kind,
            "POST",
            infer,
            {"Content-Type": rng.choice(["text/plain", "image/png", "multipart/form-data"])},
            _body(_iris()),
        )
    raise AssertionError(kind)


KINDS = [
    "datatype not a datatype",
    "id not a string",
    "bad shape",
    "data not as its shape",
    "bad parameters",
    "bad output request",
    "bad envelope",
    "deep nesting",
    "lone surrogate",
    "not JSON",
    "bad header length",
    "binary sizes that do not add up",
    "data and binary_data_size",
    "compression bomb or garbage",
    "values the model cannot take",
    "does not fit the model",
    "no such model or version",
    "wrong method or type",
]
