"""Give the memory of a large request back to the system once it is answered.

glibc's malloc keeps freed blocks in per-thread arenas for reuse: after a 60 MB body, the process
stays 60 MB larger per worker thread that served one, and RSS only grows under hostile traffic.
Two things keep it down:

- A fixed mmap threshold (MMAP_THRESHOLD). By default glibc raises the threshold to the size of each
  mmapped block it frees, up to 32 MiB: after one gzip bomb (a bytearray growing to max_request_bytes),
  every block under 32 MiB comes from the worker thread's arena instead, and the top of a thread's arena
  is never given back (malloc_trim trims only the main arena's top). At the default 64 MiB limit that
  kept about 100 MB after hostile traffic (tests/serving/test_fuzz.py). With the threshold fixed, blocks
  of a megabyte or more are mapped on their own and unmapped when freed.
- malloc_trim(0) after requests over LARGE bytes: it returns the free pages inside every arena; it costs
  well under a millisecond, so it runs only then.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

from flask import Flask, g, request

LARGE = 4 * 1024 * 1024
MMAP_THRESHOLD = 1024 * 1024
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


@functools.cache
def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:  # not glibc: nothing to tune or trim
        return None


def _malloc_trim():
    libc = _libc()
    return None if libc is None else libc.malloc_trim


@functools.cache
def fix_mmap_threshold() -> bool:
    """Once per process (the allocator is the process's, not an app's); False where there is no glibc."""
    libc = _libc()
    return libc is not None and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1


def note_size(size: int) -> None:
    """What a request really took (a decompressed body can be far larger than its Content-Length)."""
    g.onnxport_request_bytes = max(size, g.get("onnxport_request_bytes", 0))


def trim_if_large(size: int) -> None:
    trim = _malloc_trim()
    if size > LARGE and trim is not None:
        trim(0)


def init_app(app: Flask) -> None:
    fix_mmap_threshold()  # before the first request and the first session load

    @app.teardown_request
    def release(_exc: BaseException | None) -> None:
        trim_if_large(max(request.content_length or 0, g.get("onnxport_request_bytes", 0)))
