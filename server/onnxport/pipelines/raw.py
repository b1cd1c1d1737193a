"""What one request's raw input may cost, and how a kind refuses it: the server's raw_max_* settings
(docs/reference/server.md, "Limits"), checked on the request's own figures (rows, bytes, image headers) before any text
is tokenized or image decoded. The server answers a RawInputError with a 400 and an OverLimit with a 413."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np


class RawInputError(ValueError):
    """Raw input a kind cannot take: the message names the input, what was expected and what came."""


class OverLimit(RawInputError):
    """Raw input over one of the limits: the message names its setting."""


@dataclass(frozen=True)
class Limits:
    rows: int
    text_bytes: int
    image_pixels: int
    request_pixels: int

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> Limits:
        return cls(
            settings["raw_max_rows"],
            settings["raw_max_text_bytes"],
            settings["raw_max_image_pixels"],
            settings["raw_max_request_pixels"],
        )

    def check_rows(self, kind: str, value: np.ndarray) -> None:
        rows = int(value.shape[0]) if value.ndim else 0
        if rows == 0:
            raise RawInputError(f"input {kind!r}: shape {list(value.shape)} holds no {kind}; send at least one row")
        if rows > self.rows:
            raise OverLimit(
                f"input {kind!r}: {rows:,} rows; this server takes at most {self.rows:,} per request "
                "(setting raw_max_rows): send them in several requests"
            )
