"""Which generation models this server serves: the setting generation_models' decoder folders (a name -> a
folder, opened once at start, version "1"), and the repository's decoders (the manifest's `decoders`: a name,
its served variants as versions, the default variant when none is named; OpenAI's `model` may say
"NAME:VARIANT"). A setting's name wins over a repository decoder of the same name.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from onnxport.errors import RepositoryError
from onnxport.generation.decoder_folder import DecoderFolder
from onnxport.repository import decoder_record
from onnxport.repository.decoder_record import DecoderEntry
from onnxport.repository.store import Repository
from onnxport.runtime import SessionSettings
from onnxport.serving.config import ConfigError
from onnxport.serving.generate.failures import GenerateError

VERSION = "1"  # a folder is one version; Triton names a model's only version 1
NOT_OPENED = "not loaded: its session is created by the first generation"


@dataclass(frozen=True)
class VersionState:
    """A row of Triton's repository index: a generation model's version, READY once its session is open."""

    name: str
    version: str
    ready: bool
    reason: str  # "" when ready


class GenerationModels(Protocol):
    def names(self) -> list[str]: ...

    def versions(self) -> list[VersionState]: ...

    def find(self, name: str, version: str | None) -> tuple[str, DecoderFolder]:
        """(the version served, its folder); a GenerateError 404 for a name or version not served."""
        ...


class FolderModels:
    def __init__(self, folders: dict[str, Path], session: SessionSettings | None = None) -> None:
        """Each folder opened now, its session run by `session` (threads, providers, spinning; None:
        onnxruntime's defaults on the CPU)."""
        self._open: dict[str, DecoderFolder] = {}
        for name, folder in folders.items():
            try:
                self._open[name] = DecoderFolder.open(folder, session=session)
            except Exception as exc:  # whatever opening a folder raises, said as the setting's fault
                raise ConfigError(
                    f"setting generation_models: model {name!r}: {folder} is not a decoder folder "
                    f"(model.onnx, tokenizer.json, generation.json): {exc}"
                ) from exc

    def names(self) -> list[str]:
        return sorted(self._open)

    def versions(self) -> list[VersionState]:
        return [VersionState(name, VERSION, True, "") for name in self.names()]  # opened at start

    def find(self, name: str, version: str | None) -> tuple[str, DecoderFolder]:
        folder = self._open.get(name)
        if folder is None:
            served = ", ".join(self.names()) or "none"
            raise GenerateError(404, f"no generation model {name!r}; served: {served}", param="model")
        if version is not None and version != VERSION:
            raise GenerateError(404, f"generation model {name!r} has no version {version!r}; it has {VERSION}")
        return VERSION, folder


class RepositoryModels:
    """The repository's decoders with a served variant. The manifest is read at each request, so a build's commit
    is served from the next one on; a variant's file is opened once (its tokenizer files linked beside it in a
    folder of this server's own, as a decoder folder names them)."""

    def __init__(self, root: Path, session: SessionSettings | None = None) -> None:
        self._repository = Repository(root)
        self._session = session
        self._open: dict[str, DecoderFolder] = {}  # by the variant file's sha256
        self._lock = threading.Lock()
        self._folders = Path(tempfile.mkdtemp(prefix="onnxport-decoders-"))  # links only: removed with this object
        weakref.finalize(self, shutil.rmtree, self._folders, ignore_errors=True)

    def _decoders(self) -> dict[str, DecoderEntry]:
        if not self._repository.manifest_path.exists():
            return {}
        try:
            return self._repository.read_manifest().get("decoders", {})
        except RepositoryError:  # the V2 routes say what is wrong with it; generation serves none of it
            return {}

    def names(self) -> list[str]:
        return sorted(
            name
            for name, entry in self._decoders().items()
            if any(decoder_record.outcome(v) == "served" for v in entry["variants"].values())
        )

    def versions(self) -> list[VersionState]:
        """Every variant of every decoder: READY once its file is open, else why not."""
        rows = []
        for name, entry in sorted(self._decoders().items()):
            for variant, record in entry["variants"].items():
                if record["status"] != "ok" or not decoder_record.made(record):
                    why = f"not served: {record['status']}: {record['reason']}"
                    rows.append(VersionState(name, variant, False, why))
                elif record["sha256"] in self._open:
                    rows.append(VersionState(name, variant, True, ""))
                else:
                    rows.append(VersionState(name, variant, False, NOT_OPENED))
        return rows

    def find(self, name: str, version: str | None) -> tuple[str, DecoderFolder] | None:
        """(the variant served, its folder); None for a name the repository has no decoder of; a GenerateError 404
        for a variant it does not serve."""
        entry = self._decoders().get(name)
        if entry is None:
            return None
        variant = version or entry["default_variant"]
        record = entry["variants"].get(variant)
        served = [v for v, r in entry["variants"].items() if decoder_record.outcome(r) == "served"]
        if record is None or not decoder_record.made(record) or record["status"] != "ok":
            why = f" ({decoder_record.outcome(record).replace('_', ' ')}: {record['reason']})" if record else ""
            raise GenerateError(
                404,
                f"generation model {name!r} has no served variant {variant!r}{why}; served: {', '.join(served)}",
                param="model",
            )
        with self._lock:
            folder = self._open.get(record["sha256"])
            if folder is None:
                folder = self._open[record["sha256"]] = self._opened(name, entry, record["file"])
        return variant, folder

    def _opened(self, name: str, entry: DecoderEntry, file: str) -> DecoderFolder:
        links = self._folders / Path(file).stem
        links.mkdir(exist_ok=True)
        for asset in entry["assets"].values():
            link = links / asset["name"]
            if not link.exists():
                link.symlink_to(self._repository.path_of(asset["file"]).resolve())
        try:
            return DecoderFolder.open(links, model=str(self._repository.path_of(file).resolve()), session=self._session)
        except Exception as exc:  # a repository file gone or broken: this model, not the server
            raise GenerateError(503, f"generation model {name!r} cannot be opened: {exc}") from exc


class ServedModels:
    """The setting's folders, then the repository's decoders."""

    def __init__(self, folders: FolderModels, repository: RepositoryModels) -> None:
        self._folders = folders
        self._repository = repository

    def names(self) -> list[str]:
        return sorted({*self._folders.names(), *self._repository.names()})

    def versions(self) -> list[VersionState]:
        shadowed = set(self._folders.names())  # a setting's name wins over a repository decoder of the same name
        return self._folders.versions() + [v for v in self._repository.versions() if v.name not in shadowed]

    def find(self, name: str, version: str | None) -> tuple[str, DecoderFolder]:
        if name in self._folders.names():
            return self._folders.find(name, version)
        model, _, variant = name.partition(":")  # OpenAI's `model` names a variant this way
        found = self._repository.find(model, version or variant or None)
        if found is None:
            served = ", ".join(self.names()) or "none"
            raise GenerateError(404, f"no generation model {name!r}; served: {served}", param="model")
        return found
