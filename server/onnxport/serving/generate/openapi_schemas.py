"""The generation routes' request and answer objects for /v2/openapi.json (http/generate.py's paths()).

Each request schema refuses nothing the server takes (optional fields may be null, whole numbers may be 2.0)
and the server refuses what it refuses, so schemathesis's negative cases all get a 4xx.
"""

from __future__ import annotations

from onnxport.json_boundary import JsonObject
from onnxport.serving.generate.fields import MAX_STOP_CHARS, MAX_STOPS
from onnxport.serving.generate.openai_wire import NEUTRAL


def _nullable(schema: JsonObject) -> JsonObject:
    return {"anyOf": [schema, {"type": "null"}]}


STOP = _nullable(
    {
        "anyOf": [
            {"type": "string", "minLength": 1, "maxLength": MAX_STOP_CHARS},
            {
                "type": "array",
                "maxItems": MAX_STOPS,
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_STOP_CHARS},
            },
        ]
    }
)


def sampling(top_k: bool = True) -> JsonObject:
    found = {
        "max_tokens": _nullable({"type": "integer", "minimum": 1}),
        "temperature": _nullable({"type": "number", "minimum": 0, "maximum": 2}),
        "top_p": _nullable({"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
        "seed": _nullable({"type": "integer", "minimum": 0, "maximum": 2**63 - 1}),
        "stop": STOP,
        "stream": _nullable({"type": "boolean"}),
    }
    if top_k:
        found["top_k"] = _nullable({"type": "integer", "minimum": 0})
    return found


GENERATE_REQUEST: JsonObject = {
    "type": "object",
    "additionalProperties": False,
    "required": ["text_input"],
    "properties": {
        "text_input": {"type": "string"},
        "parameters": _nullable({"type": "object", "additionalProperties": False, "properties": sampling()}),
        **sampling(),
    },
}
GENERATE_ANSWER: JsonObject = {
    "type": "object",
    "required": ["model_name", "model_version", "text_output"],
    "properties": {
        "model_name": {"type": "string"},
        "model_version": {"type": "string"},
        "text_output": {"type": "string"},
        "finish_reason": {"type": "string", "enum": ["stop", "length", "time"]},
        "prompt_tokens": {"type": "integer"},
        "generated_tokens": {"type": "integer"},
    },
}
MESSAGE: JsonObject = {
    "type": "object",
    "additionalProperties": False,
    "required": ["role", "content"],
    "properties": {
        "role": {"enum": ["system", "developer", "user", "assistant"]},
        "content": {
            "anyOf": [
                {"type": "string"},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["type", "text"],
                        "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
                    },
                },
            ]
        },
        "name": {"type": "string"},
    },
}
_OPENAI = {
    "model": {"type": "string", "minLength": 1},
    **sampling(),
    "stream_options": _nullable(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "include_usage": _nullable({"type": "boolean"}),
                "continuous_usage_stats": _nullable({"type": "boolean"}),
            },
        }
    ),
    # Taken at their neutral values only (openai_wire.NEUTRAL), and bookkeeping (openai_wire.IGNORED).
    **{
        name: {"enum": list(values)}
        for name, values in NEUTRAL.items()
        if name not in ("logit_bias", "response_format")
    },
    "logit_bias": _nullable({"type": "object", "maxProperties": 0}),
    "response_format": _nullable({"type": "object", "required": ["type"], "properties": {"type": {"const": "text"}}}),
    "user": _nullable({"type": "string"}),
    "metadata": _nullable({"type": "object"}),
    "store": _nullable({"type": "boolean"}),
    "service_tier": _nullable({"type": "string"}),
}
COMPLETION_REQUEST: JsonObject = {
    "type": "object",
    "additionalProperties": False,
    "required": ["model", "prompt"],
    "properties": {
        **_OPENAI,
        "prompt": {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
                {"type": "array", "minItems": 1, "maxItems": 1, "items": {"type": "string"}},
                {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 1,
                    "items": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
                },
            ]
        },
    },
}
CHAT_REQUEST: JsonObject = {
    "type": "object",
    "additionalProperties": False,
    "required": ["model", "messages"],
    "properties": {
        **_OPENAI,
        "max_completion_tokens": _nullable({"type": "integer", "minimum": 1}),
        "messages": {"type": "array", "minItems": 1, "items": MESSAGE},
    },
}
OPENAI_ANSWER: JsonObject = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices"],
    "properties": {
        "id": {"type": "string"},
        "object": {"enum": ["text_completion", "chat.completion"]},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {"type": "array"},
        "usage": {"type": "object"},
    },
}
OPENAI_ERROR: JsonObject = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {
                "message": {"type": "string", "minLength": 1},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
MODELS: JsonObject = {
    "type": "object",
    "required": ["object", "data"],
    "properties": {
        "object": {"const": "list"},
        "data": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "object", "created", "owned_by"],
                "properties": {
                    "id": {"type": "string"},
                    "object": {"const": "model"},
                    "created": {"type": "integer"},
                    "owned_by": {"type": "string"},
                },
            },
        },
    },
}
