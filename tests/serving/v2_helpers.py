"""What the V2 test modules share: the demo models and variants, and how to post an inference request."""

from __future__ import annotations

import json

from demo_variants import MODEL_VARIANTS, VARIANTS  # noqa: F401 - shared with the V2 test modules

MODELS = ["iris", "digits", "minilm"]
JSON = "application/json"


def infer_url(model: str, variant: str | None = None) -> str:
    return f"/v2/models/{model}/infer" if variant is None else f"/v2/models/{model}/versions/{variant}/infer"


def post_json(client, url: str, body, **kw):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(url, data=data, content_type=JSON, **kw)


def iris_request(**extra) -> dict:
    return {
        "inputs": [{"name": "features", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}],
        **extra,
    }
