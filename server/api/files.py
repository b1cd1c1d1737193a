"""Send a file from a folder, never from outside it (`..`, encoded dots, absolute paths, symlinks)."""

from __future__ import annotations

from pathlib import Path

from flask import Response, request, send_file

from ..catalog import NotFound


def send_contained(root: Path, relative: str, *, cache_control: str, etag: str | bool = True) -> Response:
    base = root.resolve()
    if relative.startswith("/") or "\\" in relative or "\0" in relative:
        raise NotFound(f"no file {relative!r}")
    path = (base / relative).resolve()  # resolves symlinks, so a link out of the folder is caught
    if not path.is_relative_to(base) or not path.is_file():
        raise NotFound(f"no file {relative!r}")
    return send(path, cache_control=cache_control, etag=etag)


def send(path: Path, *, cache_control: str, etag: str | bool = True) -> Response:
    """Conditional (ETag/304) and ranged (206) sending with an exact Content-Length."""
    response = send_file(path, conditional=True, etag=etag, max_age=None)
    response.headers["Cache-Control"] = cache_control
    if request.method == "HEAD":
        response.headers["Content-Length"] = str(path.stat().st_size)
    return response
