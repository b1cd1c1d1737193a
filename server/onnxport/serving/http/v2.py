"""The Open Inference Protocol (V2) over HTTP: health, metadata, readiness, inference."""

from __future__ import annotations

import functools
import gzip
import re
import zlib

from flask import Blueprint, Response, jsonify, request

from onnxport import __version__
from onnxport.serving import inference, openapi, protocol
from onnxport.serving.http import memory
from onnxport.serving.http.errors import ApiError
from onnxport.serving.state import state

blueprint = Blueprint("v2", __name__, url_prefix="/v2")

EXTENSIONS = ["binary_tensor_data"]
PLATFORM = "onnx_onnxv1"
# curl -d sends form-urlencoded by default; its body is still our JSON, so it is read as such.
ACCEPTED_TYPES = {"", "application/json", "application/octet-stream", "application/x-www-form-urlencoded"}


@blueprint.get("/health/live")
def live():
    return jsonify({"live": True})


@blueprint.get("/health/ready")
def ready():
    if state().catalog.ready():
        return jsonify({"ready": True})
    return jsonify({"error": "not ready: no models in the repository (run `onnxport build`)"}), 503


@blueprint.get("")
def server_metadata():
    return jsonify({"name": "onnxport", "version": __version__, "extensions": EXTENSIONS})


@blueprint.get("/openapi.json")
def openapi_document():
    """This API described for OpenAPI tools (serving/openapi.py), generated from the code that checks requests."""
    return jsonify(_openapi())


@functools.cache
def _openapi() -> dict:
    return openapi.document()


@blueprint.get("/models/<model>")
@blueprint.get("/models/<model>/versions/<version>")
def model_metadata(model: str, version: str | None = None):
    catalog = state().catalog
    if version is None:
        entry = catalog.model(model)
        versions = catalog.served_versions(entry)
    else:
        entry, version, _ = catalog.variant(model, version)
        versions = [version]
    return jsonify({
        "name": model,
        "versions": versions,
        "platform": PLATFORM,
        "inputs": inference.tensor_metadata(entry["inputs"]),
        "outputs": inference.tensor_metadata(entry["outputs"]),
    })


@blueprint.get("/models/<model>/ready")
@blueprint.get("/models/<model>/versions/<version>/ready")
def model_ready(model: str, version: str | None = None):
    catalog = state().catalog
    _, version, record = catalog.variant(model, version)
    catalog.file(record["file"])  # the artifact must be there
    return jsonify({"name": model, "version": version, "ready": True})


@blueprint.post("/models/<model>/infer")
@blueprint.post("/models/<model>/versions/<version>/infer")
def infer(model: str, version: str | None = None) -> Response:
    if request.mimetype not in ACCEPTED_TYPES:
        raise ApiError(415, f"Content-Type {request.mimetype!r} is not accepted; send application/json "
                            "(or application/octet-stream with Inference-Header-Content-Length)")
    decoded = protocol.decode_request(_body(), _header_length())
    served_version, outputs = inference.infer(state().catalog, state().sessions, model, version, decoded,
                                              state().batching)
    body, header_length = protocol.encode_response(model, served_version, decoded, outputs)
    response = Response(body, mimetype="application/octet-stream" if header_length is not None else "application/json")
    if header_length is not None:
        response.headers["Inference-Header-Content-Length"] = str(header_length)
    return response


def _header_length() -> int | None:
    raw = request.headers.get("Inference-Header-Content-Length")
    if raw is None:
        return None
    # Digits only: int() would also take "+111", " 7" and "1_000", which no HTTP number is.
    if not re.fullmatch(r"[0-9]{1,19}", raw):
        raise ApiError(400, f"Inference-Header-Content-Length must be a decimal number of bytes, got {raw!r}")
    return int(raw)


def _body() -> bytes:
    """The request body, decompressed when the client compressed it (tritonclient can), within the limit."""
    body = request.get_data(cache=False)
    encoding = request.headers.get("Content-Encoding", "").lower()
    if not encoding or encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate"):
        raise ApiError(415, f"Content-Encoding {encoding!r} is not supported; use gzip, deflate or none")
    memory.note_size(len(body))
    decoded = _decompress(body, encoding, state().settings["max_request_bytes"])
    memory.note_size(len(decoded))
    return decoded


CHUNK = 1 << 20  # decoded bytes per step: a gzip bomb costs the limit plus this, never more


def _decompress(body: bytes, encoding: str, limit: int) -> bytes:
    decompressor = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    out = bytearray()
    pending = body
    try:
        while True:
            out += decompressor.decompress(pending, CHUNK)
            if len(out) > limit:
                memory.note_size(len(out))
                raise ApiError(413, f"the decompressed body is over the {limit}-byte limit")
            pending = decompressor.unconsumed_tail  # input held back because CHUNK was reached
            if decompressor.eof or not pending:
                break
        out += decompressor.flush()  # at most zlib's window (32 KB) is still held inside
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise ApiError(400, f"the body is not valid {encoding} data: {exc}") from exc
    if not decompressor.eof:
        raise ApiError(400, f"the body is not valid {encoding} data: it ends before the compressed stream does")
    if len(out) > limit:
        raise ApiError(413, f"the decompressed body is over the {limit}-byte limit")
    return bytes(out)
