"""A name from a URL as a regular file inside a folder: the one rule every route that serves files uses.

A URL can name what the file system refuses: a component over 255 bytes (ENAMETOOLONG), a path over
PATH_MAX, a NUL byte, a symlink loop, a folder it may not enter. Each of those means "no such file here"
to the client (a 404), never an error of the server's.
"""

from __future__ import annotations

from pathlib import Path

# What os.stat() and Path.resolve() raise for a name they refuse: OSError (ENAMETOOLONG, EACCES, ELOOP...),
# ValueError (a NUL byte; a character the file system's encoding cannot write), RuntimeError (a symlink
# loop, from resolve() on Python 3.11).
REFUSED = (OSError, ValueError, RuntimeError)


def file_inside(folder: Path, relative: str) -> Path | None:
    """The regular file `relative` names inside `folder`, symlinks resolved (so a link out of it is outside),
    or None: outside the folder, absolute, missing, not a regular file, or refused by the file system."""
    if relative.startswith("/") or "\\" in relative or "\0" in relative:
        return None
    try:
        base = folder.resolve()
        path = (base / relative).resolve()
        if path.is_relative_to(base) and path.is_file():
            return path
    except REFUSED:
        pass
    return None
