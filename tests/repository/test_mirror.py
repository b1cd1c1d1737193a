"""server/onnxport/repository/mirror.py: a replica's local copy of a published repository, from real servers.

Published repositories here are a real `onnxport serve` (its /repository/) and, as a CDN would host
the folder as is, Python's own static file server (http.server) on a folder. No mocks.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from fixtures.tiny_decoder import tiny_decoder_repository
from onnxport.accuracy import budgets
from onnxport.errors import RepositoryError
from onnxport.harness.process import free_port
from onnxport.repository.atomic import TEMP_SUFFIX
from onnxport.repository.mirror import sync
from onnxport.repository.store import SCHEMA, SCHEMA_VERSION, Repository
from onnxport.serving import config
from onnxport.serving.config import ConfigError
from onnxport.serving.models.catalog import Catalog


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static file server of one folder; paths in `errors` answer that status instead."""

    errors: ClassVar[dict[str, int]] = {}

    def do_GET(self):
        if self.path in self.errors:
            self.send_error(self.errors[self.path])
            return
        super().do_GET()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def static_host(folder: Path, errors: dict[str, int] | None = None):
    """The base URL of a plain static file server on `folder`, as a CDN hosting it as is."""
    handler = type("Handler", (QuietHandler,), {"errors": errors or {}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(folder: Path) -> list[Path]:
    """Temporary files of a sync (none may survive it)."""
    return [p for p in folder.rglob("*") if p.name.endswith(TEMP_SUFFIX)]


def sync_error(base_url: str, folder: Path, **kw) -> str:
    """The message of the RepositoryError sync raises; it must be one line."""
    with pytest.raises(RepositoryError) as raised:
        sync(base_url, folder, **kw)
    message = str(raised.value)
    assert "\n" not in message, message
    assert message.endswith("; nothing was replaced"), message
    return message


def artifacts_a_replica_loads(manifest: dict) -> set[str]:
    """Served variants' files and reference files, and assets (what sync copies)."""
    files = set()
    for entry in manifest["models"].values():
        for record in entry["variants"].values():
            if record["status"] == "ok":
                files |= {record["file"], record["reference"]["file"]}
        files |= {asset["file"] for asset in entry.get("assets", {}).values()}
    return files


def get(url: str):
    """(body, headers) of a GET; the headers are looked up case-insensitively."""
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read(), response.headers


# --------------------------------------------------------------------------- a small hand-made repository


GOLDEN = "testdata/" + "0" * 64


def write_repository(folder: Path, files: dict[str, bytes]) -> dict:
    """A published folder: a model whose fp32 is served, whose fp16 is rejected (its file present at
    the source), with an asset, and golden data in testdata/. Returns the file records by label."""
    served, rejected, asset = files["served"], files["rejected"], files["asset"]
    (folder / "artifacts").mkdir(parents=True)
    (folder / GOLDEN).mkdir(parents=True)
    (folder / GOLDEN / "input_0.pb").write_bytes(b"golden")
    records = {}
    for label, data, ext in (("served", served, "onnx"), ("rejected", rejected, "onnx"), ("asset", asset, "json")):
        relative = f"artifacts/{sha256(data)}.{ext}"
        (folder / relative).write_bytes(data)
        records[label] = {"file": relative, "sha256": sha256(data), "bytes": len(data)}
    manifest = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "models": {
            "m": {
                "variants": {
                    "fp32": {"status": "ok", "reason": None, **records["served"]},
                    "fp16": {"status": "rejected", "reason": "over budget", **records["rejected"]},
                    "int8-dynamic": {"status": "skipped", "reason": "nothing to quantize"},
                },
                "assets": {"tokenizer.json": {**records["asset"], "name": "tokenizer.json"}},
                "golden": {"path": GOLDEN, "sha256": "0" * 64, "sets": 1},
            }
        },
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return records


SMALL = {"served": b"served model bytes" * 1000, "rejected": b"rejected model bytes", "asset": b'{"vocab": {}}'}


def test_sync_copies_the_served_files_and_assets_only(tmp_path):
    source = tmp_path / "published"
    records = write_repository(source, SMALL)
    target = tmp_path / "replica"
    with static_host(source) as base:
        summary = sync(base.rstrip("/"), target)  # the trailing slash is added
        assert summary == {"downloaded": 2, "present": 0, "bytes": len(SMALL["served"]) + len(SMALL["asset"])}
        assert (target / "manifest.json").read_bytes() == (source / "manifest.json").read_bytes()
        assert sorted(p.name for p in (target / "artifacts").iterdir()) == sorted(
            Path(records[k]["file"]).name for k in ("served", "asset")
        )
        assert not (target / "testdata").exists()  # golden data: not needed to serve
        assert leftovers(target) == []

        assert sync(base, target) == {"downloaded": 0, "present": 2, "bytes": 0}

        # A local file with the wrong bytes is fetched again; a killed sync's temporary file is cleared.
        (target / records["served"]["file"]).write_bytes(b"rotten")
        (target / "artifacts" / f".x.onnx.abc{TEMP_SUFFIX}").write_bytes(b"half")
        assert sync(base, target) == {"downloaded": 1, "present": 1, "bytes": len(SMALL["served"])}
        assert (target / records["served"]["file"]).read_bytes() == SMALL["served"]
        assert leftovers(target) == []


def test_sync_copies_a_decoders_served_variants_and_tokenizer_files(tmp_path, tiny_decoder):
    strict = budgets.GenerationBudget(top1_min=1.01, nll_change_max=1.0, why="nothing but fp32 passes")
    source = tiny_decoder_repository(tmp_path / "built", tiny_decoder, strict)
    entry = source.read_manifest()["decoders"]["tiny"]
    expected = {entry["variants"]["fp32"]["file"], *(a["file"] for a in entry["assets"].values())}
    target = tmp_path / "replica"
    with static_host(source.root) as base:
        assert sync(base, target)["downloaded"] == len(expected) == 5  # fp32, tokenizer, generation, template, golden
    assert {f"artifacts/{p.name}" for p in (target / "artifacts").iterdir()} == expected  # not the over-budget ones


def test_a_404_base_url_names_the_url(tmp_path):
    (tmp_path / "empty").mkdir()
    with static_host(tmp_path / "empty") as base:
        message = sync_error(base + "models/", tmp_path / "replica")
    assert message.startswith(f"artifacts_url {base}models/: manifest.json: HTTP 404 "), message
    assert "expected the URL of a folder holding manifest.json and artifacts/" in message
    assert not (tmp_path / "replica" / "manifest.json").exists()


def test_a_500_on_an_artifact_names_it_and_leaves_the_previous_copy(tmp_path):
    source = tmp_path / "published"
    records = write_repository(source, SMALL)
    target = tmp_path / "replica"
    (target / "artifacts").mkdir(parents=True)
    (target / "manifest.json").write_text("previous")
    with static_host(source, errors={"/" + records["served"]["file"]: 500}) as base:
        message = sync_error(base, target)
    assert message.startswith(f"artifacts_url {base}: {records['served']['file']}: HTTP 500 "), message
    assert (target / "manifest.json").read_text() == "previous"
    assert not (target / records["served"]["file"]).exists()
    assert leftovers(target) == []


def test_a_refused_connection_names_the_url(tmp_path):
    base = f"http://127.0.0.1:{free_port()}/repository/"  # nobody listens there
    message = sync_error(base, tmp_path / "replica")
    assert message.startswith(f"artifacts_url {base}: manifest.json: cannot connect: "), message
    assert "Connection refused" in message


def test_a_server_that_never_answers_times_out(tmp_path):
    with socket.socket() as listener:  # accepts connections (the kernel does) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        base = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        message = sync_error(base, tmp_path / "replica", timeout=0.5)
    assert message == f"artifacts_url {base}: manifest.json: no answer within 0.5 s; nothing was replaced"


@pytest.mark.parametrize(
    "text, fragment",
    [
        (
            "<html>a login page</html>",
            "manifest.json is not JSON (Expecting value: line 1 column 1 (char 0)); got Content-Type ",
        ),
        ("[1, 2]", "manifest.json: expected a JSON object (a manifest), got list"),
        (
            '{"schema": "other.thing", "schema_version": 7, "models": {}}',
            "manifest.json: schema 'other.thing' version 7; expected 'onnxport.manifest' version 3",
        ),
        (
            '{"schema": "onnxport.manifest", "schema_version": 1, "models": {}}',
            "manifest.json was written by an older onnxport (manifest version 1; this one writes 3): rebuild it",
        ),
        (
            '{"schema": "onnxport.manifest", "schema_version": 2, "models": {}}',
            "manifest.json was written by an older onnxport (manifest version 2; this one writes 3): rebuild it",
        ),
        (
            '{"schema": "onnxport.manifest", "schema_version": 3, "models": {"m": {"variants": {"fp32": {}}}}}',
            "manifest.json: a model entry is not as onnxport writes it (KeyError: 'status')",
        ),
    ],
)
def test_a_manifest_this_onnxport_does_not_read_is_refused(tmp_path, text, fragment):
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "manifest.json").write_text(text)
    target = tmp_path / "replica"
    target.mkdir()
    (target / "manifest.json").write_text("previous")
    with static_host(tmp_path / "published") as base:
        message = sync_error(base, target)
    assert message.startswith(f"artifacts_url {base}: "), message
    assert fragment in message, message
    assert (target / "manifest.json").read_text() == "previous"


@pytest.mark.parametrize(
    "file, fragment",
    [
        ("artifacts/../../outside.onnx", "names 'artifacts/../../outside.onnx'; expected artifacts/<sha256>.<ext>"),
        (f"artifacts/{'a' * 64}.onnx", f"has sha256 {sha256(SMALL['served'])} in its record, expected {'a' * 64}"),
    ],
)
def test_a_file_name_that_is_not_its_hash_is_refused(tmp_path, file, fragment):
    source = tmp_path / "published"
    records = write_repository(source, SMALL)
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["models"]["m"]["variants"]["fp32"]["file"] = file
    (source / "manifest.json").write_text(json.dumps(manifest))
    with static_host(source) as base:
        message = sync_error(base, tmp_path / "replica")
    assert fragment in message, message
    assert not (tmp_path / "outside.onnx").exists()
    assert not (tmp_path / "replica" / records["served"]["file"]).exists()


def test_a_file_cut_short_at_the_source_is_refused(tmp_path):
    source = tmp_path / "published"
    records = write_repository(source, SMALL)
    (source / records["served"]["file"]).write_bytes(SMALL["served"][:100])
    with static_host(source) as base:
        message = sync_error(base, tmp_path / "replica")
    assert (
        f"{records['served']['file']}: 100 bytes, expected {len(SMALL['served'])} as its manifest record gives"
    ) in message, message
    assert leftovers(tmp_path / "replica") == []


# --------------------------------------------------------------------------- the demo repository, served


@pytest.mark.slow
def test_sync_from_a_live_server_serves_every_served_variant(
    live_server, demo_repository, demo_manifest, golden_inputs, reference_outputs, tmp_path
):
    import onnxruntime as ort

    target = tmp_path / "replica"
    summary = sync(live_server + "/repository/", target)

    served_manifest, _ = get(live_server + "/api/manifest")
    assert json.loads((target / "manifest.json").read_bytes()) == json.loads(served_manifest) == demo_manifest
    expected = artifacts_a_replica_loads(demo_manifest)
    copied = {f"artifacts/{p.name}" for p in (target / "artifacts").iterdir()}
    assert copied == expected
    for relative in copied:
        assert sha256((target / relative).read_bytes()) == Path(relative).stem
    assert summary == {
        "downloaded": len(expected),
        "present": 0,
        "bytes": sum((demo_repository / f).stat().st_size for f in expected),
    }
    assert not (target / "testdata").exists() and leftovers(target) == []

    catalog = Catalog(Repository(target))
    count = 0
    for model, entry in catalog.manifest()["models"].items():
        for version in Catalog.served_versions(entry):
            _, _, record = catalog.variant(model, version)
            assert catalog.file(record["file"]).read_bytes() == (demo_repository / record["file"]).read_bytes()
            count += 1
        for asset in entry["assets"].values():
            assert catalog.file(asset["file"]).read_bytes() == (demo_repository / asset["file"]).read_bytes()
    assert count == sum(len(Catalog.served_versions(e)) for e in demo_manifest["models"].values())

    # An onnxruntime session on the copy runs as one on the original does.
    _, _, record = catalog.variant("digits", "int8-static")
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads, options.log_severity_level = 0, 1, 3
    session = ort.InferenceSession(str(catalog.file(record["file"])), options, providers=["CPUExecutionProvider"])
    feeds = golden_inputs("digits")
    names = [o.name for o in session.get_outputs()]
    expected_outputs = reference_outputs("digits", "int8-static", feeds)
    for name, value in zip(names, session.run(names, feeds)):
        np.testing.assert_array_equal(value, expected_outputs[name])

    assert sync(live_server + "/repository", target) == {"downloaded": 0, "present": len(expected), "bytes": 0}


@pytest.mark.slow
def test_repository_manifest_json_is_the_api_manifest(live_server):
    api, api_headers = get(live_server + "/api/manifest")
    published, headers = get(live_server + "/repository/manifest.json")
    assert published == api
    assert headers["Cache-Control"] == api_headers["Cache-Control"] == "no-cache"
    assert headers["ETag"] == api_headers["ETag"]
    assert headers["Content-Type"] == "application/json"
    request = urllib.request.Request(
        live_server + "/repository/manifest.json", headers={"If-None-Match": headers["ETag"]}
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=30)
    raised.value.close()
    assert raised.value.code == 304


@pytest.mark.slow
def test_a_404_on_the_live_server_names_the_url(live_server, tmp_path):
    message = sync_error(live_server + "/nowhere/", tmp_path / "replica")
    assert message.startswith(f"artifacts_url {live_server}/nowhere/: manifest.json: HTTP 404 "), message


@pytest.mark.slow
def test_a_tampered_artifact_is_refused_and_the_previous_copy_stays(repository_copy, serve_repository, tmp_path):
    good = repository_copy(["iris"])
    tampered = repository_copy(["iris", "digits"])
    record = json.loads((tampered / "manifest.json").read_text())["models"]["digits"]["variants"]["fp32"]
    data = bytearray((tampered / record["file"]).read_bytes())
    data[len(data) // 2] ^= 0xFF  # same name, same size, other bytes
    (tampered / record["file"]).write_bytes(data)

    target = tmp_path / "replica"
    sync(serve_repository(good) + "/repository/", target)
    previous = (target / "manifest.json").read_bytes()

    base = serve_repository(tampered) + "/repository/"
    message = sync_error(base, target)
    assert message == (
        f"artifacts_url {base}: {record['file']}: sha256 is {sha256(bytes(data))}, expected "
        f"{record['sha256']} (the file was altered in transit or at the source); nothing was replaced"
    )
    assert (target / "manifest.json").read_bytes() == previous
    assert not (target / record["file"]).exists()
    assert leftovers(target) == []
    assert list(Catalog(Repository(target)).manifest()["models"]) == ["iris"]  # the previous copy serves on


# --------------------------------------------------------------------------- the setting


@pytest.mark.parametrize(
    "raw, parsed",
    [
        ("https://cdn.example.com/models/", "https://cdn.example.com/models/"),
        ("http://10.0.0.5:8000/repository", "http://10.0.0.5:8000/repository"),
        ("", None),
    ],
)
def test_artifacts_url_takes_http_urls(raw, parsed):
    assert config.load(None, environ={"ONNXPORT_ARTIFACTS_URL": raw})["artifacts_url"] == parsed
    assert config.load({"artifacts_url": raw}, environ={})["artifacts_url"] == parsed
    assert config.load({}, environ={})["artifacts_url"] is None


@pytest.mark.parametrize("raw", ["ftp://x", "cdn.example.com/models/", "https://", "file:///srv/repository"])
def test_artifacts_url_refuses_other_schemes(raw):
    with pytest.raises(ConfigError) as raised:
        config.load(None, environ={"ONNXPORT_ARTIFACTS_URL": raw})
    message = str(raised.value)
    assert message.startswith(f"$ONNXPORT_ARTIFACTS_URL: {raw!r} is not a valid artifacts_url: "), message
    assert "expected an http:// or https:// URL" in message


def test_artifacts_url_in_the_config_file_must_be_text(tmp_path):
    path = tmp_path / "onnxport.json"
    path.write_text(json.dumps({"artifacts_url": 5}))
    with pytest.raises(ConfigError, match="artifacts_url.*expected a URL"):
        config.load(None, environ={"ONNXPORT_CONFIG": str(path)})
    path.write_text(json.dumps({"artifacts_url": None}))
    assert config.load(None, environ={"ONNXPORT_CONFIG": str(path)})["artifacts_url"] is None
