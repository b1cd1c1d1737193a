"""Send a file from a folder, never from outside it (`..`, encoded dots, absolute paths, symlinks)."""

from __future__ import annotations

from pathlib import Path

from flask import Response, request, send_file

from onnxport.serving.models.catalog import NotFound
from onnxport.serving.models.file_paths import file_inside


def contained(root: Path, relative: str) -> Path:
    """The file `relative` names inside `root`, symlinks resolved; NotFound when it is not one."""
    path = file_inside(root, relative)
    if path is None:
        raise NotFound(f"no file {relative!r}")
    return path


def send_contained(root: Path, relative: str, *, cache_control: str, etag: str | bool = True) -> Response:
    return send(contained(root, relative), cache_control=cache_control, etag=etag)


def send(path: Path, *, cache_control: str, etag: str | bool = True) -> Response:
    """Conditional (ETag/304) and ranged (206) sending with an exact Content-Length."""
    try:
        response = send_file(path, conditional=True, etag=etag, max_age=None)
    except OSError as exc:  # there a moment ago, but not readable (EACCES) or gone: none to send
        raise NotFound(f"no readable file {path.name!r} ({exc.strerror})") from exc
    response.headers["Cache-Control"] = cache_control
    if request.method == "HEAD":
        response.headers["Content-Length"] = str(path.stat().st_size)
    return response


def send_latest(path: Path) -> Response:
    """A JSON file a command rewrites (bench.json, conformance.json), revalidated on every use.

    No content rather than 404 while it does not exist: having none yet is normal, and browsers log every 404.
    """
    try:
        body = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return no_content({"Cache-Control": "no-cache"})
    response = Response(body, mimetype="application/json")
    response.headers["Cache-Control"] = "no-cache"
    return response


def no_content(headers: dict[str, str]) -> Response:
    response = Response(status=204, headers=headers)
    del response.headers["Content-Type"]  # nothing to type (Flask's default would say text/html)
    return response
