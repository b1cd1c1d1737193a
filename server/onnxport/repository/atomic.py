"""The one way a file is written into the repository, and the one lock its writers take.

Every writer goes through here: a build's, an import's or a remove's commit (store.py), the
verdicts of `onnxport check` (check/verdict_file.py), the figures of `onnxport bench` (bench/bench_run.py)
and a replica's sync (mirror.py).

A file is written under a unique temporary name beside its place (the same folder: the same
filesystem, so the rename is atomic), flushed to disk, renamed over the old one, and then the
folder's entry is flushed too. Readers (the server, a static host, a browser) see the old file or
the new one, never half of one; a write that fails or is killed leaves the old file as it was. A
failure removes its temporary file; a killed writer's, and a killed build's or import's staging folder
(.staging/, store.py), are cleared by the next writer as soon as it holds the lock (lock, clear_leftovers).

The lock is the repository's `.lock` (layout.LOCK_FILE), an flock: the kernel drops it when its
holder exits, however it exits, so a killed writer never leaves the repository locked. A build,
an import or a remove holds it for its whole run and refuses to start while another writer holds
it; check, bench and a sync wait their turn. It is not re-entrant: a second `lock` on the same
repository in one process is a second writer (refused, or a deadlock with `wait`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from onnxport.errors import RepositoryError
from onnxport.repository import layout

TEMP_SUFFIX = ".tmp"


@contextlib.contextmanager
def lock(root: Path | str, *, wait: bool = False, waiting: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the repository's one-writer lock; a second writer is refused, or with `wait` waits its turn.

    `waiting` is told (once, before it blocks) when a waiting writer finds the lock held: a build
    may hold it for minutes, and a command that says nothing meanwhile looks hung.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / layout.LOCK_FILE, "w") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            if not wait:
                raise RepositoryError(f"{root} is being written by another onnxport process") from exc
            if waiting is not None:
                waiting(f"{root} is being written by another onnxport process; waiting for it to finish")
            fcntl.flock(held, fcntl.LOCK_EX)
        # Whatever a killed writer left is no one's now: every writer holds this lock.
        clear_leftovers(root)
        yield


@contextlib.contextmanager
def atomic_file(path: Path | str) -> Iterator[IO[bytes]]:
    """A binary file to write `path` through: in place, whole, when the block ends without an error.

    An error in the block (or while writing) removes the temporary file, keeps the old `path` and
    propagates; a block that checks what it wrote (a hash, a size) raises to refuse it.
    """
    path = Path(path)
    # pid and a random token: writers in other processes (or threads) never share a temporary file.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    try:
        # "x": never someone else's file; the mode follows the umask like any other file we write.
        with open(temporary, "xb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def write_bytes_atomically(path: Path | str, data: bytes) -> None:
    with atomic_file(path) as handle:
        handle.write(data)


def write_json_atomically(path: Path | str, data: Any, *, sort_keys: bool = False) -> None:
    """`data` as indented JSON with a final newline, written whole or not at all."""
    write_bytes_atomically(path, (json.dumps(data, indent=2, sort_keys=sort_keys) + "\n").encode())


def clear_leftovers(root: Path) -> None:
    """Remove what killed writers left in the repository at `root`: the staging folder of a build, import
    or remove (nothing in it was ever referenced), and temporary files of writes cut short. Only while
    holding the lock."""
    shutil.rmtree(root / layout.STAGING_DIR, ignore_errors=True)
    for folder in (root, root / layout.ARTIFACTS_DIR):
        if folder.is_dir():
            remove_leftovers(folder)


def remove_leftovers(folder: Path | str) -> None:
    """Remove the temporary files killed writers left in `folder`; only while holding the lock
    (every writer holds it, so none of them is in use)."""
    for leftover in Path(folder).glob(f".*{TEMP_SUFFIX}"):
        if leftover.is_file():
            leftover.unlink(missing_ok=True)


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entries: without it a crash can lose the rename though the bytes were on disk."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # a folder we cannot open for reading: the rename is done, only its durability is unknown
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some filesystems cannot flush a folder; the rename is done either way
    finally:
        os.close(descriptor)
