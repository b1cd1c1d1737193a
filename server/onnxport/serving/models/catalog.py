"""The read side of the repository for a running server: the current manifest and its files.

The manifest is re-read when its file changes (a new build), so new artifacts
are served without a restart; listeners hear which artifacts are current.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Callable, cast

from onnxport.errors import OnnxportError
from onnxport.repository import decoder_record
from onnxport.repository.manifest import Manifest, ModelEntry
from onnxport.repository.names import RULE_TEXT, name_problem
from onnxport.repository.store import Repository, referenced_files
from onnxport.repository.variant_record import ServedVariant, made, served
from onnxport.repository.variant_table import order as variant_order
from onnxport.serving.models.file_paths import file_inside

log = logging.getLogger("onnxport.server")


class NotFound(OnnxportError):
    """An unknown model, version or file (HTTP 404)."""


# Before the first build there is no manifest.json: the server publishes an empty list of models, without the
# schema's keys (what /api/manifest.json has always answered then), so the type is asserted, not met.
NO_MANIFEST = cast(Manifest, {"models": {}})


class Catalog:
    def __init__(self, repository: Repository):
        self.repository = repository
        self._lock = threading.Lock()
        self._stamp: tuple | None = None
        self._manifest: Manifest = NO_MANIFEST
        self._files: set[str] = set()
        self._refused: dict[str, str] = {}  # model name -> what breaks the name rule
        self._listeners: list[Callable[[set[str]], None]] = []

    def on_reload(self, listener: Callable[[set[str]], None]) -> None:
        """listener(current sha256s) runs after each reload."""
        self._listeners.append(listener)

    def manifest(self) -> Manifest:
        stamp = self._stat()
        if stamp != self._stamp:
            with self._lock:
                if stamp != self._stamp:
                    self._reload(stamp)
        return self._manifest

    def ready(self) -> bool:
        manifest = self.manifest()
        return bool(manifest["models"] or manifest.get("decoders"))  # a decoder alone is served too (generate)

    def model(self, name: str) -> ModelEntry:
        entry = self.manifest()["models"].get(name)
        if entry is None:
            if name in self._refused:
                raise NotFound(
                    f"model {name!r} is in the manifest but not served: its name breaks the name rule "
                    f"({self._refused[name]}): {RULE_TEXT}; `onnxport remove` it and import it again"
                )
            known = ", ".join(sorted(self._manifest["models"])) or "none"
            raise NotFound(f"unknown model {name!r}; served models: {known}")
        return entry

    def variant(self, name: str, version: str | None) -> tuple[ModelEntry, str, ServedVariant]:
        """(model entry, version name, variant record) of a served variant; fp32 by default."""
        entry = self.model(name)
        version = version or "fp32"
        record = entry["variants"].get(version)
        if record is None:
            raise NotFound(f"model {name!r} has no version {version!r}; versions: {', '.join(entry['variants'])}")
        if not served(record):
            raise NotFound(
                f"version {version!r} of model {name!r} is not served: {record['status']}: {record['reason']}"
            )
        return entry, version, record

    @staticmethod
    def served_versions(entry: ModelEntry) -> list[str]:
        """Versions with status ok, fp32 first, then the others in build order."""
        versions = [v for v, r in entry["variants"].items() if served(r)]
        return sorted(versions, key=variant_order)

    def file(self, relative: str) -> Path:
        """The path of a file the manifest references (an artifact, or a file in a golden data folder)."""
        self.manifest()
        parts = relative.split("/")
        if "" not in parts and "." not in parts and ".." not in parts:
            # An artifact is named exactly; a golden file lies inside a golden folder the manifest names.
            allowed = relative if relative in self._files else "/".join(parts[:2])
            if allowed in self._files and (allowed == relative or parts[0] == "testdata"):
                path = file_inside(self.repository.root / allowed, relative[len(allowed) + 1 :])
                if path is not None:
                    return path
        raise NotFound(f"no file {relative!r} in the repository")

    def _stat(self) -> tuple | None:
        try:
            st = os.stat(self.repository.manifest_path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)

    def _reload(self, stamp: tuple | None) -> None:
        manifest = self.repository.read_manifest() if stamp else NO_MANIFEST
        # A name that breaks the rule (an older or hand-edited manifest) is not served: it would be a
        # URL segment and a browser cache key. Its files go too, so its sessions are released.
        problems = {name: name_problem(name) for name in manifest["models"]}
        self._refused = {name: problem for name, problem in problems.items() if problem}
        if self._refused:
            log.warning(
                "not serving %s from %s: %s",
                ", ".join(map(repr, sorted(self._refused))),
                self.repository.manifest_path,
                f"the name rule: {RULE_TEXT}",
            )
            manifest = {**manifest, "models": {n: e for n, e in manifest["models"].items() if n not in self._refused}}
        self._files = {rel for entry in manifest["models"].values() for rel in referenced_files(entry)}
        # A decoder's files too (golden.json, the tokenizer, each variant): what a runtime elsewhere is held to
        self._files |= {rel for entry in manifest.get("decoders", {}).values() for rel in decoder_record.files(entry)}
        self._manifest = manifest
        self._stamp = stamp
        current = {
            record["sha256"]
            for entry in manifest["models"].values()
            for record in entry["variants"].values()
            if made(record)
        }
        for listener in self._listeners:
            listener(current)
