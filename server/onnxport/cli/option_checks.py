"""What a command line names, checked before any work: a usage error (exit 2) naming the option otherwise.

A file or folder to read is checked by `readable` (convert/intake/request.py, where the import's options are).
"""

from __future__ import annotations

import os
from pathlib import Path

from onnxport.errors import UsageError
from onnxport.repository.manifest import Manifest


def writable_output(option: str, path: Path | None) -> None:
    """A report's file can be written, checked before minutes of measurement rather than after them."""
    if path is None:
        return
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; expected a file name, e.g. {path / 'report.json'}")
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{option} {path}: not writable here")


def chromium_given(executable: str | None) -> None:
    """--browser, when given, names a Chromium that runs: refused before a server starts."""
    if executable:
        from onnxport.harness.chromium import executable_path

        if not Path(executable).exists():
            raise UsageError(f"--browser {executable}: no such file; expected a Chromium executable")
        executable_path(executable)


def known_models(
    manifest: Manifest, names: list[str], repository: Path | None = None, *, decoders: bool = False
) -> None:
    """Every model named on the command line is in the repository: a usage error (exit 2) listing them.
    With `repository`, the command works on every model by default, and an empty repository is refused
    too (a check or bench of it would wait for a server that is never ready). With `decoders`, the names of the
    manifest's decoders are known too (check runs them on the server)."""
    if repository is not None and not manifest["models"] and not (decoders and manifest.get("decoders")):
        raise UsageError(
            f"no models in the repository {repository}; run `onnxport build` or `onnxport import` "
            "first, or name another with --repository"
        )
    known_names = set(manifest["models"]) | (set(manifest.get("decoders") or {}) if decoders else set())
    unknown = [n for n in dict.fromkeys(names) if n not in known_names]
    if unknown:
        known = ", ".join(sorted(known_names)) or "none (run `onnxport build`)"
        raise UsageError(f"unknown model {', '.join(map(repr, unknown))}; the repository has: {known}")
