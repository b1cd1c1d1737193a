"""The `pip install` line that adds an extra to this onnxport: from the wheel (or folder) it was installed from.

onnxport is on no package index, so `pip install 'onnxport[sklearn]'` finds nothing for a wheel user. pip
records where a package came from in its dist-info's direct_url.json (PEP 610): a wheel file's URL, or a
folder's (editable or not). While that is still on disk, the line names it and runs as written; otherwise
it names placeholder(), which the user replaces with wherever their wheel is.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse


def placeholder(distribution: str = "onnxport") -> str:
    """path/to/onnxport-0.1.0-py3-none-any.whl: the wheel's file name, the installed version in it."""
    try:
        version = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        version = "VERSION"
    return f"path/to/onnxport-{version}-py3-none-any.whl"


@dataclass(frozen=True)
class Source:
    """Where this onnxport was installed from: a wheel file, a folder (editable or not), another URL, or unknown."""

    location: str  # a path, a URL, or placeholder()
    editable: bool = False
    url: bool = False  # location is a URL that is not a local file (pip's `name[extra] @ URL` form)
    known: bool = True  # False: location is placeholder()

    def pip_install(self, extra: str) -> str:
        """`pip install '<wheel>[extra]'`, as a shell line that runs as written."""
        if self.url:
            return f"pip install {shlex.quote(f'onnxport[{extra}] @ {self.location}')}"
        return f"pip install {'-e ' if self.editable else ''}{shlex.quote(f'{self.location}[{extra}]')}"


def installed_from(distribution: str = "onnxport") -> Source:
    """The Source pip recorded for `distribution`; the placeholder when none is recorded or its file is gone."""
    unknown = Source(placeholder(distribution), known=False)
    try:
        recorded = metadata.distribution(distribution).read_text("direct_url.json")
        direct = json.loads(recorded) if recorded else None
    except (metadata.PackageNotFoundError, json.JSONDecodeError, OSError):
        direct = None
    if not isinstance(direct, dict) or not isinstance(direct.get("url"), str):
        return unknown
    parsed = urlparse(direct["url"])
    if parsed.scheme != "file":
        return Source(direct["url"], url=True)
    path = Path(unquote(parsed.path))
    if not path.exists():
        return unknown
    folder = direct.get("dir_info")
    return Source(str(path), editable=isinstance(folder, dict) and folder.get("editable") is True)
