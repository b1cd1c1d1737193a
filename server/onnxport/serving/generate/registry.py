"""Which generation models this server serves: a name -> a decoder folder, opened once at start.

For now they come from the setting generation_models; the repository's decoder models will come through the
same small interface (GenerationModels), so that change is here alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from onnxport.generation.decoder_folder import DecoderFolder
from onnxport.runtime import SessionSettings
from onnxport.serving.config import ConfigError
from onnxport.serving.generate.failures import GenerateError

VERSION = "1"  # a folder is one version; Triton names a model's only version 1


class GenerationModels(Protocol):
    def names(self) -> list[str]: ...

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

    def find(self, name: str, version: str | None) -> tuple[str, DecoderFolder]:
        folder = self._open.get(name)
        if folder is None:
            served = ", ".join(self.names()) or "none"
            raise GenerateError(404, f"no generation model {name!r}; served: {served}", param="model")
        if version is not None and version != VERSION:
            raise GenerateError(404, f"generation model {name!r} has no version {version!r}; it has {VERSION}")
        return VERSION, folder
