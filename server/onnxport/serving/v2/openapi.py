"""The OpenAPI description of the V2 protocol's routes and objects; serving/http/openapi.py adds every other
route's (each blueprint describes its own) and serves the whole at /v2/openapi.json.

It follows the Open Inference Protocol's REST OpenAPI document (KServe's `rest_predict_v2.yaml`):
the same paths, and the same request and response objects. Ours is stricter where the server is:
the request schema is request_schema.py's models (unknown fields and unsupported parameters are
refused), and every failure is `{"error": "..."}`. A request the schema allows may still be refused
with a 400, because which inputs a model takes (names, datatypes, shapes) is in that model's
metadata (`GET /v2/models/{model_name}`), not in this document.
"""

from __future__ import annotations

import copy
from typing import Iterable, get_args

from onnxport.json_boundary import JsonObject
from onnxport.serving.v2 import request_schema

ERROR = {"$ref": "#/components/schemas/Error"}
DATATYPES = list(get_args(request_schema.Datatype))


def json_response(schema: JsonObject, description: str) -> JsonObject:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def errors(*codes: int) -> JsonObject:
    """The one error shape, under each status code, with what it means on V2's routes."""
    why = {
        400: "the request does not follow the protocol, or does not fit the model",
        404: "no such model or version",
        413: "the body (decompressed) is over max_request_bytes, or its JSON strings over max_json_string_bytes",
        415: "unsupported Content-Type or Content-Encoding",
        500: "a fault of the server (with a request id)",
        503: "no model is ready",
        401: "missing or wrong admin token (Authorization: Bearer <token>)",
        403: "load/unload is off: the server has no admin_token",
    }
    return {str(code): json_response(ERROR, why[code]) for code in codes}


def _tensor_metadata() -> JsonObject:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "datatype", "shape"],
        "properties": {
            "name": {"type": "string"},
            "datatype": {"type": "string", "enum": DATATYPES},
            "shape": {"type": "array", "items": {"type": "integer", "minimum": -1}},
        },
    }


def _schemas() -> JsonObject:
    request = request_schema.InferenceRequest.model_json_schema(ref_template="#/components/schemas/{model}")
    definitions = request.pop("$defs", {})
    return {
        **definitions,
        "InferenceRequest": request,
        "Error": {
            "type": "object",
            "additionalProperties": False,
            "required": ["error"],
            "properties": {"error": {"type": "string", "minLength": 1}},
        },
        "ServerMetadata": {
            "type": "object",
            "required": ["name", "version", "extensions"],
            "properties": {
                "name": {"type": "string"},
                "version": {"type": "string"},
                "extensions": {"type": "array", "items": {"type": "string"}},
            },
        },
        "ModelMetadata": {
            "type": "object",
            "required": ["name", "versions", "platform", "inputs", "outputs"],
            "properties": {
                "name": {"type": "string"},
                "versions": {"type": "array", "items": {"type": "string"}},
                "platform": {"type": "string"},
                "inputs": {"type": "array", "items": _tensor_metadata()},
                "outputs": {"type": "array", "items": _tensor_metadata()},
            },
        },
        "ModelReady": {
            "type": "object",
            "required": ["name", "version", "ready"],
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}, "ready": {"type": "boolean"}},
        },
        "InferenceResponse": {
            "type": "object",
            "required": ["model_name", "model_version", "outputs"],
            "properties": {
                "model_name": {"type": "string"},
                "model_version": {"type": "string"},
                "id": {"type": "string"},
                "outputs": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "datatype", "shape"],
                        "properties": {
                            "name": {"type": "string"},
                            "datatype": {"type": "string", "enum": DATATYPES},
                            "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                            "data": {"type": "array"},
                            "parameters": {
                                "type": "object",
                                "properties": {"binary_data_size": {"type": "integer", "minimum": 0}},
                            },
                        },
                    },
                },
            },
        },
    }


MODEL = {"name": "model_name", "in": "path", "required": True, "schema": {"type": "string"}, "example": "iris"}
VERSION = {"name": "model_version", "in": "path", "required": True, "schema": {"type": "string"}, "example": "fp32"}
EXAMPLE = {"inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.9, 3.0, 5.1, 1.8]}]}


def _infer_response() -> JsonObject:
    """JSON, or with binary outputs (binary_data_output, binary_data) the binary tensor extension:
    a JSON header of Inference-Header-Content-Length bytes, then the raw tensors."""
    response = json_response({"$ref": "#/components/schemas/InferenceResponse"}, "the outputs")
    response["content"]["application/octet-stream"] = {"schema": {"type": "string", "format": "binary"}}
    response["headers"] = {
        "Inference-Header-Content-Length": {
            "description": "with application/octet-stream: the length of the JSON header",
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }
    }
    return response


def _infer(parameters: list[JsonObject]) -> JsonObject:
    return {
        "post": {
            "summary": "Run the model (the latest version: fp32) on the request's inputs",
            "parameters": copy.deepcopy(parameters),
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"$ref": "#/components/schemas/InferenceRequest"},
                        "example": EXAMPLE,
                    }
                },
            },
            "responses": {"200": _infer_response(), **errors(400, 404, 413, 415, 500)},
        }
    }


def get_operation(
    summary: str, schema: str | JsonObject, *codes: int, parameters: Iterable[JsonObject] = ()
) -> JsonObject:
    """A GET whose 200 is JSON: a schema of components/schemas by name, or one given whole."""
    return {
        "get": {
            "summary": summary,
            "parameters": copy.deepcopy(list(parameters)),
            "responses": {
                "200": json_response(
                    {"$ref": f"#/components/schemas/{schema}"} if isinstance(schema, str) else schema, summary
                ),
                **errors(*codes),
            },
        }
    }


def paths() -> JsonObject:
    """The protocol's own paths: health, metadata, readiness, inference, and this document."""
    get = get_operation
    both = (MODEL, VERSION)
    return {
        "/v2/health/live": get(
            "The server is live",
            {"type": "object", "required": ["live"], "properties": {"live": {"type": "boolean"}}},
        ),
        "/v2/health/ready": get(
            "Every model is ready",
            {"type": "object", "required": ["ready"], "properties": {"ready": {"type": "boolean"}}},
            503,
        ),
        "/v2": get("Server metadata", "ServerMetadata"),
        "/v2/openapi.json": get("This document: every route of the server, for OpenAPI tools", {"type": "object"}),
        "/v2/models/{model_name}": get("Model metadata", "ModelMetadata", 404, parameters=[MODEL]),
        "/v2/models/{model_name}/versions/{model_version}": get(
            "Model version metadata", "ModelMetadata", 404, parameters=both
        ),
        "/v2/models/{model_name}/ready": get("Model readiness", "ModelReady", 404, parameters=[MODEL]),
        "/v2/models/{model_name}/versions/{model_version}/ready": get(
            "Model version readiness", "ModelReady", 404, parameters=both
        ),
        "/v2/models/{model_name}/infer": _infer([MODEL]),
        "/v2/models/{model_name}/versions/{model_version}/infer": _infer(list(both)),
    }


def components() -> JsonObject:
    return {"schemas": _schemas()}
