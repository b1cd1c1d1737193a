"""The model repository: content-addressed files plus one manifest.

Layout (see docs/reference/manifest.md):
    manifest.json                 the contract read by the server, the browser and check
    artifacts/<sha256>.<ext>      models and assets, named by the sha256 of their bytes
    testdata/<sha256>/test_data_set_N/{input,output}_K.pb   golden data per model
    .staging/                     a running build's files, moved in at commit (a killed one's: removed by
                                  the next writer to take the lock)

A build stages everything, then commits: files are moved into place first,
the manifest is replaced last (atomic.write_json_atomically: a temporary name, then a rename), so
a build that fails or is killed leaves the previous repository as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, TypedDict, cast

from onnxport.errors import RepositoryError, UsageError
from onnxport.repository import atomic, decoder_record, layout, variant_record
from onnxport.repository.manifest import SCHEMA, SCHEMA_VERSION, Manifest, ModelEntry
from onnxport.repository.names import check_stored_name


def empty_manifest() -> Manifest:
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "models": {}}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """A file's sha256 (hex), read in blocks: a GGUF or a fp32 decoder is hundreds of MB."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class Repository:
    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.manifest_path = self.root / layout.MANIFEST_FILE
        self.artifacts = self.root / layout.ARTIFACTS_DIR
        self.testdata = self.root / layout.TESTDATA_DIR

    # -------------------------------------------------------------- read side

    def read_manifest(self) -> Manifest:
        if not self.manifest_path.exists():
            return empty_manifest()
        try:
            manifest = json.loads(self.manifest_path.read_text())
        except (OSError, ValueError) as exc:
            raise RepositoryError(f"{self.manifest_path} is not readable JSON: {exc}") from exc
        return check_manifest(
            manifest, str(self.manifest_path), f"remove {self.root} and run `onnxport build` (and your imports) again"
        )

    def path_of(self, relative: str) -> Path:
        return self.root / relative

    def has_files(self, entry: ModelEntry) -> bool:
        """True when every file an entry of the manifest names is present."""
        return all(self.path_of(rel).exists() for rel in referenced_files(entry))

    # -------------------------------------------------------------- write side

    def lock(self, *, wait: bool = False) -> contextlib.AbstractContextManager[None]:
        """The one-writer lock (.lock, atomic.lock); a second writer is refused, or with `wait` waits its turn."""
        return atomic.lock(self.root, wait=wait)

    @contextlib.contextmanager
    def transaction(self) -> Iterator["Transaction"]:
        """Exclusive write access; staged files vanish unless commit() is reached."""
        with self.lock():  # which clears what a killed writer left (atomic.clear_leftovers)
            staging_root = self.root / layout.STAGING_DIR
            staging_root.mkdir()
            transaction = Transaction(self, Path(tempfile.mkdtemp(dir=staging_root)))
            try:
                yield transaction
            finally:
                shutil.rmtree(staging_root, ignore_errors=True)


def remove(repository: Repository, names: list[str]) -> list[ModelEntry]:
    """Remove models from the repository as a build adds them: all or none, the manifest written last.

    Returns the removed model entries (a decoder's name removes it too, returned in none). An unknown name is a
    UsageError listing the known models, and nothing is removed. Files that no remaining model names are deleted
    after the manifest is replaced (the commit's garbage collection): a running server already holds its sessions
    in memory and drops them on its next request, and an artifact another model shares stays.
    """
    if not repository.manifest_path.exists():  # nothing to remove: not even a lock file is made
        raise UsageError(
            f"no model {', '.join(map(repr, dict.fromkeys(names)))} in {repository.root}; the repository has: none"
        )
    with repository.transaction() as transaction:
        manifest = repository.read_manifest()
        decoders = manifest.get("decoders", {})  # decoders for generation go the same way
        unknown = [n for n in dict.fromkeys(names) if n not in manifest["models"] and n not in decoders]
        if unknown:
            known = ", ".join(sorted([*manifest["models"], *decoders])) or "none"
            raise UsageError(
                f"no model {', '.join(map(repr, unknown))} in {repository.root}; "
                f"the repository has: {known}; nothing was removed"
            )
        removed = [manifest["models"].pop(n) for n in dict.fromkeys(names) if n in manifest["models"]]
        for name in dict.fromkeys(names):
            decoders.pop(name, None)
        transaction.commit(manifest)
    return removed


class FileRecord(TypedDict):
    """A staged file as the manifest names it (a variant's, a form's, a reference's or an asset's keys)."""

    file: str
    sha256: str
    bytes: int


class FolderRecord(TypedDict):
    """A staged folder (golden data) as the manifest names it (an entry's `golden` keys)."""

    path: str
    sha256: str


class Transaction:
    def __init__(self, repository: Repository, staging: Path):
        self.repository = repository
        self.staging = staging
        self._staged: dict[str, Path] = {}  # final relative path -> staged path

    def put_file(self, data: bytes, extension: str) -> FileRecord:
        """Stage bytes under their hash; returns the manifest's file record."""
        digest = sha256_bytes(data)
        relative = f"artifacts/{digest}.{extension}"
        if relative not in self._staged and not self.repository.path_of(relative).exists():
            staged = self.staging / relative
            staged.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes_atomically(staged, data)  # on disk before the manifest can name it
            self._staged[relative] = staged
        return {"file": relative, "sha256": digest, "bytes": len(data)}

    def put_folder(self, folder: Path) -> FolderRecord:
        """Stage a folder (golden data) under the hash of its files' names and bytes."""
        digest = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        relative = f"testdata/{digest.hexdigest()}"
        if relative not in self._staged and not self.repository.path_of(relative).exists():
            staged = self.staging / relative
            staged.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(folder, staged)
            self._staged[relative] = staged
        return {"path": relative, "sha256": digest.hexdigest()}

    def commit(self, manifest: Manifest) -> None:
        """Move staged files into place, then replace the manifest, then drop unreferenced files.

        Every entry written (new or changed) keeps the name rule (repository/names.py), for its model
        and variant names: the store never writes a name that could become a path elsewhere. Entries
        left as they were are not judged again, so an old repository's bad name can still be removed.
        """
        root = self.repository.root
        before = self.repository.read_manifest()["models"]
        for name, entry in manifest["models"].items():
            if before.get(name) != entry:
                where = f"refusing to write {self.repository.manifest_path}"
                check_stored_name(name, where, fix="nothing was written")
                for variant in entry.get("variants", {}):
                    check_stored_name(variant, f"{where} (model {name!r})", what="variant", fix="nothing was written")
        decoders_before = self.repository.read_manifest().get("decoders", {})
        for name, decoder in manifest.get("decoders", {}).items():
            if decoders_before.get(name) != decoder:
                check_stored_name(name, f"refusing to write {self.repository.manifest_path}", fix="nothing was written")
        for relative, staged in self._staged.items():
            final = root / relative
            final.parent.mkdir(parents=True, exist_ok=True)
            if not final.exists():
                os.replace(staged, final)
        atomic.write_json_atomically(self.repository.manifest_path, manifest, sort_keys=True)
        self._staged.clear()
        self._collect_garbage(manifest)

    def _collect_garbage(self, manifest: Manifest) -> None:
        keep = {rel for entry in manifest["models"].values() for rel in referenced_files(entry)}
        keep |= {rel for entry in manifest.get("decoders", {}).values() for rel in decoder_record.files(entry)}
        for folder in (self.repository.artifacts, self.repository.testdata):
            if folder.is_dir():
                for path in folder.iterdir():
                    if str(path.relative_to(self.repository.root)) not in keep:
                        shutil.rmtree(path) if path.is_dir() else path.unlink()


def check_manifest(manifest: Any, source: str, rebuild: str) -> Manifest:
    """`manifest` (JSON as read) if it is one this onnxport reads (schema and version), else a RepositoryError
    naming `source`; `rebuild` says what to do about one written by an older onnxport. The one place JSON
    becomes a Manifest: its keys are the schema's (tests/repository/test_manifest_schema.py holds the build to it)."""
    if not isinstance(manifest, dict):
        raise RepositoryError(f"{source}: expected a JSON object (a manifest), got {type(manifest).__name__}")
    if (
        manifest.get("schema") == SCHEMA
        and isinstance(manifest.get("schema_version"), int)
        and manifest["schema_version"] < SCHEMA_VERSION
    ):
        raise RepositoryError(
            f"{source} was written by an older onnxport (manifest version "
            f"{manifest['schema_version']}; this one writes {SCHEMA_VERSION}): {rebuild}"
        )
    if manifest.get("schema") != SCHEMA or manifest.get("schema_version") != SCHEMA_VERSION:
        raise RepositoryError(
            f"{source}: schema {manifest.get('schema')!r} version "
            f"{manifest.get('schema_version')!r}; expected {SCHEMA!r} version {SCHEMA_VERSION}"
        )
    return cast(Manifest, manifest)


def referenced_files(entry: ModelEntry) -> set[str]:
    made = [v for v in entry.get("variants", {}).values() if variant_record.made(v)]
    files = {v["file"] for v in made}
    files |= {v["reference"]["file"] for v in made if v.get("reference")}
    for variant in made:
        for form in variant_record.forms_of(variant).values():
            if variant_record.made_form(form):
                files |= {form["file"], form["reference"]["file"]}
    files |= {a["file"] for a in entry.get("assets", {}).values()}
    if entry.get("golden", {}).get("path"):
        files.add(entry["golden"]["path"])
    return files
