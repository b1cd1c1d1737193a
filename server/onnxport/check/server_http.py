"""The check's requests to the server it checks: JSON in and out, a failure said as an OnnxportError naming the
URL (the row it belongs to becomes an `error` or `skipped` row, and the check goes on)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from onnxport.errors import OnnxportError
from onnxport.json_boundary import JsonObject


def get_bytes(url: str, timeout_s: float = 120) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.read()
    except OSError as exc:
        raise OnnxportError(f"GET {url} failed: {exc}") from exc


def get_json(url: str, timeout_s: float = 120) -> Any:
    return json.loads(get_bytes(url, timeout_s))


def post_json(url: str, body: JsonObject, timeout_s: float) -> Any:
    """The server's JSON answer; a refusal says its status and the start of its body."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", "replace")
        raise OnnxportError(f"POST {url}: HTTP {exc.code}: {detail}") from exc
    except (OSError, ValueError) as exc:
        raise OnnxportError(f"POST {url} failed: {exc}") from exc
