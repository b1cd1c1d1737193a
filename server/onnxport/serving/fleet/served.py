"""Which files this server serves, by sha256, and what its manifest says of each: a report's result must name
one of them with the manifest's own model, variant, form and one of the file's browser runtimes, so neither
the groups nor the /metrics labels can be made up (docs/reference/fleet.md, A report)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Mapping

from onnxport.accuracy.browser_runtimes import NAMES as BROWSER_RUNTIMES
from onnxport.serving.fleet.reports import Result


@dataclass(frozen=True)
class ServedFile:
    model: str
    variant: str
    form: str | None
    runtimes: tuple[str, ...]  # the browser runtime keys it is for


class ServedFiles:
    """The served variants' and forms' files of one manifest, by sha256 (one file may be served twice)."""

    def __init__(self, manifest: Mapping[str, Any]):
        self.by_sha256: dict[str, list[ServedFile]] = {}
        for model, entry in manifest.get("models", {}).items():
            for variant, record in entry.get("variants", {}).items():
                if record.get("status") != "ok" or not record.get("sha256"):
                    continue
                self._add(record["sha256"], ServedFile(model, variant, None, BROWSER_RUNTIMES))
                for form, made in (record.get("forms") or {}).items():
                    if made.get("status") == "ok" and made.get("sha256"):
                        runtimes = tuple(made.get("runtimes") or BROWSER_RUNTIMES)
                        self._add(made["sha256"], ServedFile(model, variant, form, runtimes))

    def _add(self, sha256: str, served: ServedFile) -> None:
        self.by_sha256.setdefault(sha256, []).append(served)

    def label_pairs(self) -> set[tuple[str, str]]:
        """The (model, variant) pairs /metrics may name."""
        return {(f.model, f.variant) for files in self.by_sha256.values() for f in files}

    def problem(self, index: int, result: Result) -> str | None:
        """Why results[index] is no result of a file served here (one line), or None."""
        where = f"field 'results[{index}]"
        files = self.by_sha256.get(result.sha256)
        if not files:
            return f"{where}.sha256': {result.sha256} is not a file this server serves (see /api/manifest)"
        named = [f for f in files if (f.model, f.variant, f.form) == (result.model, result.variant, result.form)]
        if not named:
            served = files[0]
            return (
                f"{where}': file {result.sha256} is model {served.model!r}, variant {served.variant!r}, form "
                f"{_form(served.form)} on this server; the result says model {result.model!r}, variant "
                f"{result.variant!r}, form {_form(result.form)}"
            )
        if not any(result.runtime in f.runtimes for f in named):
            return (
                f"{where}.runtime': {result.runtime!r} is not a browser runtime of file {result.sha256}; "
                f"expected one of {', '.join(named[0].runtimes)}"
            )
        return None


def _form(form: str | None) -> str:
    return "none" if form is None else repr(form)


class ServedIndex:
    """ServedFiles of the catalog's current manifest, made again only when the manifest is a new one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: tuple[Mapping[str, Any], ServedFiles] | None = None  # the manifest is held: its id stays its own

    def of(self, manifest: Mapping[str, Any]) -> ServedFiles:
        last = self._last
        if last is not None and last[0] is manifest:
            return last[1]
        with self._lock:
            if self._last is None or self._last[0] is not manifest:
                self._last = (manifest, ServedFiles(manifest))
            return self._last[1]
