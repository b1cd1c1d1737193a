"""Send a file from a folder, never from outside it (`..`, encoded dots, absolute paths, symlinks)."""

from __future__ import annotations

from pathlib import Path

from flask import Response, request, send_file

from onnxport.serving.catalog import NotFound


def contained(root: Path, relative: str) -> Path:
    """The file `relative` names inside `root`, symlinks resolved; NotFound when it is not one."""
    base = root.resolve()
    if relative.startswith("/") or "\\" in relative or "\0" in relative:
        raise NotFound(f"no file {relative!r}")
    path = (base / relative).resolve()  # resolves symlinks, so a link out of the folder is caught
    if not path.is_relative_to(base) or not path.is_file():
        raise NotFound(f"no file {relative!r}")
    return path


def send_contained(root: Path, relative: str, *, cache_control: str, etag: str | bool = True) -> Response:
    return send(contained(root, relative), cache_control=cache_control, etag=etag)


def send(path: Path, *, cache_control: str, etag: str | bool = True) -> Response:
    """Conditional (ETag/304) and ranged (206) sending with an exact Content-Length."""
    response = send_file(path, conditional=True, etag=etag, max_age=None)
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
