"""What the protocol test modules share: a JSON request body, and a response split at its header length."""

from __future__ import annotations

import json


def json_body(inputs: list[dict], **extra) -> bytes:
    return json.dumps({"inputs": inputs, **extra}).encode()


def split_response(body: bytes, header_length: int | None) -> tuple[dict, bytes]:
    if header_length is None:
        return json.loads(body), b""
    return json.loads(body[:header_length]), body[header_length:]
