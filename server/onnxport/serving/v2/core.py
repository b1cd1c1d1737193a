"""The V2 API as plain functions over bytes: what the Flask blueprints (http/v2.py and its neighbours) call,
under waitress and in every Ray Serve replica alike, so there is one implementation of the protocol.

Each function takes the server's state (a Server: serving/state.py's State, handed in by the caller, so that
no web framework is needed to find it) and the request's parts and returns a Reply, or raises: ApiError,
ProtocolError and NotFound are the client's (error_reply gives their status), anything else is ours
(internal_error: a 500 with a request id).
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import re
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Protocol
from urllib.parse import urlsplit

from onnxport import __version__
from onnxport.pipelines.raw import Limits
from onnxport.repository.manifest import ModelEntry
from onnxport.serving import statistics
from onnxport.serving.config import ANY_ORIGIN, ServerSettings
from onnxport.serving.models.batching_policy import BatchingPolicy
from onnxport.serving.models.catalog import Catalog, NotFound
from onnxport.serving.models.sessions import SessionPool
from onnxport.serving.v2 import inference, json_budget, protocol, raw_input
from onnxport.serving.v2.protocol import ProtocolError
from onnxport.serving.v2.request_schema import MAX_RANK

log = logging.getLogger("onnxport.server")

EXTENSIONS = ["binary_tensor_data"]
PLATFORM = "onnx_onnxv1"
# Only types a cross-origin page cannot send without a preflight (which cors_origins answers), and none at all
# (tritonclient sends no Content-Type; a browser always sends Origin, which http/cors.py checks). curl -d sends
# form-urlencoded: its 415 says to add the JSON header.
ACCEPTED_TYPES = {"", "application/json", "application/octet-stream"}
CHUNK = 1 << 20  # decoded bytes per step: a gzip bomb costs the limit plus this, never more


class Server(Protocol):
    """What the core reads of one server's state (serving/state.py's State has it)."""

    settings: ServerSettings
    catalog: Catalog
    sessions: SessionPool
    batching: BatchingPolicy
    recorder: statistics.Recorder | None


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def json_reply(value: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(value, separators=(",", ":")).encode())


def error_reply(exc: BaseException) -> Reply | None:
    """The client's mistakes as {"error": ...} with their status; None for a fault of ours."""
    if isinstance(exc, ApiError):
        return json_reply({"error": exc.message}, exc.status)
    if isinstance(exc, ProtocolError):
        return json_reply({"error": str(exc)}, exc.status)
    if isinstance(exc, NotFound):
        return json_reply({"error": str(exc)}, 404)
    return None


def internal_error(exc: BaseException) -> Reply:
    # The log gets the details, the client an id to quote and nothing of our internals.
    request_id = uuid.uuid4().hex[:16]
    log.error("request %s failed", request_id, exc_info=exc)
    reply = json_reply({"error": f"internal error (request id {request_id})"}, 500)
    reply.headers["X-Request-Id"] = request_id
    return reply


def foreign_origin(state: Server, headers) -> str | None:
    """Why a request sent by a page whose origin is neither this server's own nor in cors_origins is refused
    (403) before any work, or None: a page elsewhere can send some POSTs without a preflight (no Content-Type,
    for one), and the browser only hides the answer from it, after the server has run the request. Clients that
    are not browsers send no Origin and are not affected."""
    origin = headers.get("Origin")
    if origin is None:
        return None
    allowed = state.settings["cors_origins"]
    if ANY_ORIGIN in allowed or origin.lower() in allowed or _same_host(origin, headers.get("Host") or ""):
        return None
    return (
        f"origin {origin} may not send requests to this server: it is not this server's own and not in the "
        f"setting cors_origins ({', '.join(allowed) or 'none'})"
    )


def _same_host(origin: str, host: str) -> bool:
    """Origin names the host and port the request came to (the scheme is not compared: behind a TLS proxy the
    page is https and this server hears http; a port left out is the origin's scheme's default)."""
    scheme = urlsplit(origin).scheme
    sent, heard = _host_port(origin, scheme), _host_port(f"//{host}", scheme)
    return sent is not None and sent == heard


def _host_port(url: str, scheme: str) -> tuple[str, int] | None:
    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:  # a port that is no number
        return None
    return None if not parts.hostname or port is None else (parts.hostname.lower(), port)


def live(state: Server) -> Reply:
    return json_reply({"live": True})


def ready(state: Server) -> Reply:
    if state.catalog.ready():
        return json_reply({"ready": True})
    return json_reply({"error": "not ready: no models in the repository (run `onnxport build`)"}, 503)


def server_metadata(state: Server, extra: tuple[str, ...] = ()) -> Reply:
    """extra: extensions only one engine has (waitress's model_repository, http/repository_api.py)."""
    return json_reply({"name": "onnxport", "version": __version__, "extensions": [*EXTENSIONS, *extra]})


def model_metadata(state: Server, model: str, version: str | None = None) -> Reply:
    catalog = state.catalog
    if version is None:
        entry = catalog.model(model)
        versions = catalog.served_versions(entry)
    else:
        entry, version, _ = catalog.variant(model, version)
        versions = [version]
    return json_reply(
        {
            "name": model,
            "versions": versions,
            "platform": PLATFORM,
            "inputs": inference.tensor_metadata(entry["inputs"]),
            "outputs": inference.tensor_metadata(entry["outputs"]),
        }
    )


def model_ready(state: Server, model: str, version: str | None = None) -> Reply:
    catalog = state.catalog
    _, version, record = catalog.variant(model, version)
    catalog.file(record["file"])  # the artifact must be there
    return json_reply({"name": model, "version": version, "ready": True})


def infer(
    state: Server,
    model: str,
    version: str | None,
    mimetype: str,
    headers,
    body: bytes | IO[bytes],
    sizes: list[int] | None = None,
) -> Reply:
    """headers: the request's (case-insensitive .get); body: its bytes or a stream of them (read in chunks
    here); sizes, if given, hears the decoded body's size."""
    recorder = state.recorder
    if recorder is None:
        return _infer(state, model, version, mimetype, headers, body, sizes, statistics.Timing())
    timing = statistics.Timing()
    recorder.in_flight.inc()
    status = 500
    try:
        reply = _infer(state, model, version, mimetype, headers, body, sizes, timing)
        status = reply.status
        return reply
    except BaseException as exc:
        known = error_reply(exc)
        status = known.status if known else 500
        raise
    finally:
        recorder.in_flight.dec()
        served = _served_version(state, model, version)
        recorder.record(
            model,
            served or "",
            headers.get("Inference-Header-Content-Length") is not None,
            status,
            timing,
            served is not None,
        )


def _served_version(state: Server, model: str, version: str | None) -> str | None:
    """The version a request named (fp32 by default) if it is served; None keeps unknown names out of labels."""
    try:
        return state.catalog.variant(model, version)[1]
    except Exception:  # NotFound, or a manifest that cannot be read: the request's own error says which
        return None


def _infer(
    state: Server,
    model: str,
    version: str | None,
    mimetype: str,
    headers,
    body: bytes | IO[bytes],
    sizes: list[int] | None,
    timing: statistics.Timing,
) -> Reply:
    if mimetype not in ACCEPTED_TYPES:
        raise ApiError(
            415,
            f"Content-Type {mimetype!r} is not accepted; send application/json "
            "(or application/octet-stream with Inference-Header-Content-Length; with curl -d, "
            "add -H 'Content-Type: application/json')",
        )
    entry = state.catalog.model(model)  # an unknown model is a 404 before its body is read
    length = header_length(headers.get("Inference-Header-Content-Length"))
    budget = request_budget(state, model, entry)
    decoded = read_body(
        body, headers.get("Content-Encoding", ""), state.settings["max_request_bytes"], budget, length, sizes
    )
    request = protocol.decode_request(decoded, length, **_counts(entry), budget=budget, budget_checked=True)
    raw = raw_input.prepare(state.catalog, model, request, Limits.of(state.settings))
    if raw is not None:
        request = raw.request
    timing.rows = next((int(v.shape[0]) for v in request.inputs.values() if v.ndim), 1)
    timing.phase("compute_input")
    served_version, outputs = inference.infer(
        state.catalog, state.sessions, model, version, request, state.batching, timing
    )
    timing.phase("compute_infer")
    if raw is not None:
        outputs = raw.finish(outputs)
    payload, length = protocol.encode_response(model, served_version, request, outputs)
    timing.phase("compute_output")
    if length is None:
        return Reply(200, payload)
    return Reply(200, payload, "application/octet-stream", {"Inference-Header-Content-Length": str(length)})


def _counts(entry: ModelEntry) -> dict[str, int]:
    """How many inputs and outputs a request to the model can name (raw input's `answer` included)."""
    extra = 1 if entry.get("pipeline") else 0
    return {"max_inputs": len(entry["inputs"]), "max_outputs": len(entry["outputs"]) + extra}


def request_budget(state: Server, model: str, entry: ModelEntry) -> protocol.RequestBudget:
    """What the JSON of a request to this model may hold (protocol.RequestBudget): by its inputs and outputs,
    the rank of its inputs (unknown: the protocol's most), and strings only as far as names and an id go unless
    it takes text (a BYTES input, or raw input through its pipeline)."""
    counts = _counts(entry)
    inputs, outputs = counts["max_inputs"], counts["max_outputs"]
    ranks = [len(shape) if (shape := i.get("shape")) is not None else MAX_RANK for i in entry["inputs"]]
    takes_text = bool(entry.get("pipeline")) or any(
        i["datatype"] == "BYTES" for i in inference.tensor_metadata(entry["inputs"])
    )
    if entry.get("pipeline"):
        ranks.append(2)  # raw text pairs: [n, 2]
    subject = f"model {model!r} ({inputs} input{'s' * (inputs != 1)}, {outputs} output{'s' * (outputs != 1)})"
    string_bytes = None if takes_text else state.settings["max_json_string_bytes"]
    return protocol.RequestBudget.of(
        subject, inputs, outputs, max(ranks, default=1), string_bytes, None if takes_text else "max_json_string_bytes"
    )


def header_length(raw: str | None) -> int | None:
    if raw is None:
        return None
    # Digits only: int() would also take "+111", " 7" and "1_000", which no HTTP number is.
    if not re.fullmatch(r"[0-9]{1,19}", raw):
        raise ApiError(400, f"Inference-Header-Content-Length must be a decimal number of bytes, got {raw!r}")
    return int(raw)


def read_body(
    source: bytes | IO[bytes],
    encoding: str,
    limit: int,
    budget: protocol.RequestBudget,
    header_length: int | None,
    sizes: list[int] | None = None,
) -> bytearray:
    """The body, read CHUNK bytes at a time (decompressed when the client compressed it, as tritonclient can),
    within the byte limit, its JSON header checked against the budget as it comes: a hostile header is
    refused after its first chunk, with the rest left unread (the WSGI server holds it, on disk past
    its buffer)."""
    stream = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
    scanner = json_budget.Scanner(budget.json)
    out = bytearray()
    try:
        for chunk in _decoded(stream, encoding):
            before = len(out)
            out += chunk
            if sizes is not None:
                sizes.append(len(out))
            if len(out) > limit:
                what = "body" if not encoding or encoding.lower() == "identity" else "decompressed body"
                raise ApiError(413, f"the {what} is over the {limit}-byte limit")
            if header_length is None:
                scanner.feed(chunk)
            elif before < header_length:
                scanner.feed(chunk[: header_length - before])
    except json_budget.BudgetExceeded as over:
        raise budget.refusal(over) from None
    return out


def _decoded(stream: IO[bytes], encoding: str) -> Iterator[bytes]:
    """The body's bytes, CHUNK at a time: a gzip bomb is stopped by the caller at the limit plus CHUNK."""
    encoding = encoding.lower()
    if not encoding or encoding == "identity":
        while chunk := stream.read(CHUNK):
            yield chunk
        return
    if encoding not in ("gzip", "deflate"):
        raise ApiError(415, f"Content-Encoding {encoding!r} is not supported; use gzip, deflate or none")
    decompressor = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    try:
        while not decompressor.eof and (pending := stream.read(CHUNK)):
            while pending and not decompressor.eof:
                decoded = decompressor.decompress(pending, CHUNK)
                pending = decompressor.unconsumed_tail  # input held back because CHUNK was reached
                if decoded:
                    yield decoded
        if rest := decompressor.flush():  # at most zlib's window (32 KB) is still held inside
            yield rest
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise ApiError(400, f"the body is not valid {encoding} data: {exc}") from exc
    if not decompressor.eof:
        raise ApiError(400, f"the body is not valid {encoding} data: it ends before the compressed stream does")
