"""Give the memory of a large request back to the system once it is answered.

glibc's malloc keeps freed blocks in per-thread arenas for reuse: after a 60 MB body, the process
stays 60 MB larger per worker thread that served one, and RSS only grows under hostile traffic.
malloc_trim(0) returns the free pages at the top of every arena; it costs well under a millisecond,
so it runs only after requests over LARGE bytes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

from flask import Flask, g, request

LARGE = 4 * 1024 * 1024


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


def note_size(size: int) -> None:
    """What a request really took (a decompressed body can be far larger than its Content-Length)."""
    g.onnxport_request_bytes = max(size, g.get("onnxport_request_bytes", 0))


def trim_if_large(size: int) -> None:
    trim = _malloc_trim()
    if size > LARGE and trim is not None:
        trim(0)


def init_app(app: Flask) -> None:
    @app.teardown_request
    def release(_exc: BaseException | None) -> None:
        trim_if_large(max(request.content_length or 0, g.get("onnxport_request_bytes", 0)))
