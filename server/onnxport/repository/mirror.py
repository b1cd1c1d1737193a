"""A local copy of a published repository: what a replica on a machine without the folder serves from.

A published repository is the repository folder as is, at a URL: a CDN hosting it, or a static
server's /repository/. sync() fetches its manifest.json and the artifacts/ files a replica loads
(the served variants, their reference files and the models' assets), each verified against the
sha256 in its name and its manifest record. testdata/ (golden data) is not copied: a replica only
serves inference, and nothing there is read to do so.

Like a build, a sync is all or nothing for its readers: a file is renamed into place only once its
hash is right, and the manifest is replaced last (both through atomic.py, under the repository's lock),
so a failed sync leaves the previous copy whole.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import cast

from onnxport.errors import RepositoryError
from onnxport.json_boundary import JsonObject
from onnxport.repository import atomic, layout
from onnxport.repository.manifest import ModelEntry
from onnxport.repository.store import Repository, check_manifest, referenced_files, sha256_file

CHUNK = 1 << 20
# Content addressing is what makes a download checkable: a name that is not a hash is refused
# (and cannot be a path that leaves the folder).
ARTIFACT_NAME = re.compile(rf"{layout.ARTIFACTS_DIR}/(?P<sha256>[0-9a-f]{{64}})\.[A-Za-z0-9]+")


def sync(base_url: str, folder: Path | str, *, timeout: float = 60.0) -> dict[str, int]:
    """Make `folder` a copy of the repository published at `base_url` (a folder URL).

    Returns {"downloaded": files fetched, "present": files already there with the right sha256,
    "bytes": bytes fetched}. Raises RepositoryError naming the URL, what was expected and what came;
    then the previous manifest and files are still in place and no temporary file is left.
    """
    base = base_url if base_url.endswith("/") else base_url + "/"
    repository = Repository(folder)
    try:
        # Replicas on one node share the folder and start together: the second waits for the
        # first, then finds every file present.
        with repository.lock(wait=True):
            return _sync(base, repository, timeout)
    except RepositoryError as exc:
        raise RepositoryError(f"artifacts_url {base}: {exc}; nothing was replaced") from exc
    except OSError as exc:  # the network's errors are RepositoryErrors by now: this is the local folder
        raise RepositoryError(
            f"artifacts_url {base}: cannot write {repository.root}: {exc}; nothing was replaced"
        ) from exc


def _sync(base: str, repository: Repository, timeout: float) -> dict[str, int]:
    with _get(base, layout.MANIFEST_FILE, timeout) as response:
        body = _read(response, layout.MANIFEST_FILE)
        content_type = response.headers.get("Content-Type") or "none"
    try:
        manifest = json.loads(body)
    except ValueError as exc:
        raise RepositoryError(
            f"{layout.MANIFEST_FILE} is not JSON ({exc}); got Content-Type {content_type}, starting {body[:60]!r}"
        ) from None
    check_manifest(manifest, layout.MANIFEST_FILE, "rebuild it with this onnxport and publish it again")
    wanted = _artifacts(manifest)

    repository.artifacts.mkdir(parents=True, exist_ok=True)
    # A sync killed mid-download leaves its temporary file; none is in use while we hold the lock.
    for folder in (repository.root, repository.artifacts):
        atomic.remove_leftovers(folder)
    summary = {"downloaded": 0, "present": 0, "bytes": 0}
    for relative, record in sorted(wanted.items()):
        path = repository.path_of(relative)
        if path.is_file() and sha256_file(path) == record["sha256"]:
            summary["present"] += 1
            continue
        summary["bytes"] += _download(base, relative, record, path, timeout)
        summary["downloaded"] += 1

    # Last, whole and by rename: readers see the old manifest (whose files are all still there) or the new one.
    atomic.write_bytes_atomically(repository.manifest_path, body)
    return summary


def _artifacts(manifest: JsonObject) -> dict[str, JsonObject]:
    """artifacts/ file -> {sha256, bytes (None when the record has none)} of every file a replica loads."""
    wanted: dict[str, JsonObject] = {}
    try:
        for model, entry in manifest["models"].items():
            # A variant's forms are for browsers (docs/reference/manifest.md, "forms"): a replica runs it as built.
            served = {
                name: {key: value for key, value in record.items() if key != "forms"}
                for name, record in entry["variants"].items()
                if record["status"] == "ok"
            }
            records = [
                *served.values(),
                *(r["reference"] for r in served.values() if r.get("reference")),
                *entry.get("assets", {}).values(),
            ]
            by_file = {record["file"]: record for record in records if record.get("file")}
            # referenced_files is the one list of what an entry names; rejected variants' files are left out.
            # A mirror's JSON, unchecked: read as an entry, its missing keys caught below.
            for relative in sorted(referenced_files(cast(ModelEntry, {**entry, "variants": served}))):
                if relative.split("/", 1)[0] != layout.ARTIFACTS_DIR:
                    continue  # testdata/: golden data, not needed to serve
                _want(wanted, f"model {model!r}", relative, by_file.get(relative, {}))
        for model, entry in manifest.get("decoders", {}).items():  # decoders for generation: served files, assets
            served_files = [r for r in entry["variants"].values() if r["status"] == "ok"]
            for record in [*served_files, *entry["assets"].values()]:
                _want(wanted, f"decoder {model!r}", record["file"], record)
    except (KeyError, TypeError, AttributeError) as exc:
        raise RepositoryError(
            f"{layout.MANIFEST_FILE}: a model entry is not as onnxport writes it ({type(exc).__name__}: {exc})"
        ) from None
    return wanted


def _want(wanted: dict[str, JsonObject], owner: str, relative: str, record: JsonObject) -> None:
    """Adds an artifacts/ file `owner` names, checked: a content-addressed name, its record's sha256 the same."""
    match = ARTIFACT_NAME.fullmatch(relative)
    if match is None:
        raise RepositoryError(
            f"{layout.MANIFEST_FILE}: {owner} names {relative!r}; expected {layout.ARTIFACTS_DIR}/<sha256>.<ext>"
        )
    if record.get("sha256", match["sha256"]) != match["sha256"]:
        raise RepositoryError(
            f"{layout.MANIFEST_FILE}: {owner}: {relative} has sha256 {record['sha256']} in its record, expected "
            f"{match['sha256']} (the one in its name)"
        )
    if not isinstance(record.get("bytes", 0), int):
        raise TypeError(f"{relative}: bytes is {record['bytes']!r}, not a count")
    wanted[relative] = {"sha256": match["sha256"], "bytes": record.get("bytes")}


def _download(base: str, relative: str, record: JsonObject, path: Path, timeout: float) -> int:
    """Stream one file into a temporary name beside its place, hashing as it comes; rename it in if right."""
    expected_bytes = record["bytes"]
    digest = hashlib.sha256()
    size = 0
    # Raising inside the block refuses the file: its temporary file goes, the old `path` stays.
    with atomic.atomic_file(path) as out, _get(base, relative, timeout) as response:
        while chunk := _read(response, relative, CHUNK, after=size):
            size += len(chunk)
            # A source sending more than the manifest says is wrong already: stop reading it.
            if expected_bytes is not None and size > expected_bytes:
                raise RepositoryError(
                    f"{relative}: more than the {expected_bytes} bytes its manifest "
                    "record gives (the file was altered in transit or at the source)"
                )
            digest.update(chunk)
            out.write(chunk)
        if expected_bytes is not None and size != expected_bytes:
            raise RepositoryError(
                f"{relative}: {size} bytes, expected {expected_bytes} as its manifest record "
                "gives (the file was cut short or altered in transit or at the source)"
            )
        if digest.hexdigest() != record["sha256"]:
            raise RepositoryError(
                f"{relative}: sha256 is {digest.hexdigest()}, expected {record['sha256']} "
                "(the file was altered in transit or at the source)"
            )
    return size


def _get(base: str, relative: str, timeout: float) -> http.client.HTTPResponse:
    try:
        return urllib.request.urlopen(base + relative, timeout=timeout)
    except urllib.error.HTTPError as exc:
        exc.close()  # it holds the error response open
        hint = (
            " (expected the URL of a folder holding manifest.json and artifacts/)"
            if relative == layout.MANIFEST_FILE and exc.code == 404
            else ""
        )
        raise RepositoryError(f"{relative}: HTTP {exc.code} {exc.reason}{hint}") from None
    except urllib.error.URLError as exc:
        raise RepositoryError(f"{relative}: cannot connect: {exc.reason}") from None
    except ValueError as exc:  # not a URL urllib can open
        raise RepositoryError(f"{relative}: {exc}") from None
    except TimeoutError:
        raise RepositoryError(f"{relative}: no answer within {timeout:g} s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise RepositoryError(f"{relative}: no answer: {exc!r}") from None


def _read(response: http.client.HTTPResponse, relative: str, size: int | None = None, *, after: int = 0) -> bytes:
    try:
        return response.read(size)
    except (OSError, http.client.HTTPException) as exc:  # a timeout, a reset, a body cut short
        raise RepositoryError(f"{relative}: the download broke off after {after} bytes: {exc!r}") from None
