"""Fleet verdicts over HTTP (docs/reference/fleet.md): browsers POST reports, anyone GETs the published verdicts.

A client's mistake is a 4xx with the one JSON error shape; the body is read only after its size, type and the
network's rate pass, and parsed (and its files checked against the served manifest) before the token's rate is
counted. The network is the one of the peer's address as the WSGI server gives it (REMOTE_ADDR).
"""

from __future__ import annotations

import json

from flask import Blueprint, Flask, Response, request

from onnxport.json_boundary import JsonObject
from onnxport.serving.fleet import limits, reports
from onnxport.serving.fleet.metrics import FleetMetrics
from onnxport.serving.fleet.networks import network
from onnxport.serving.fleet.served import ServedIndex
from onnxport.serving.fleet.store import FleetStore
from onnxport.serving.http import path_items
from onnxport.serving.http.context import state
from onnxport.serving.http.error_shape import error_response
from onnxport.serving.state import State, record_statistics
from onnxport.serving.v2 import core, openapi

blueprint = Blueprint("fleet", __name__)
OFF = "fleet reports are off on this server (setting fleet_reports)"


def init_app(app: Flask) -> None:
    """The counters and rate limits, once per State (a Ray replica's two apps share one)."""
    shared = app.extensions["onnxport"]
    if shared.fleet is not None and shared.fleet_metrics is None:
        shared.fleet_metrics = Fleet(shared, shared.fleet)


class Fleet:
    def __init__(self, shared: State, store: FleetStore):
        settings = shared.settings
        self.served = ServedIndex()
        self.metrics = FleetMetrics(
            store, record_statistics(shared).registry, lambda: self.served.of(shared.catalog.manifest())
        )
        self.per_client = limits.RateLimit(settings["fleet_client_rate"])
        self.per_network = limits.RateLimit(settings["fleet_address_rate"])


def _fleet() -> tuple[FleetStore, Fleet] | None:
    shared = state()
    return None if shared.fleet is None else (shared.fleet, shared.fleet_metrics)


@blueprint.post("/api/fleet/reports")
def report() -> Response:
    found = _fleet()
    if found is None:
        return error_response(404, OFF)
    store, fleet = found
    refused = _refusal(fleet)
    if refused is not None:
        return refused
    try:
        parsed = reports.parse(request.get_data(cache=False))
    except reports.ReportError as exc:
        fleet.metrics.count("invalid")
        return error_response(exc.status, str(exc))
    served = fleet.served.of(state().catalog.manifest())
    problem = next(filter(None, (served.problem(i, result) for i, result in enumerate(parsed.results))), None)
    if problem is not None:
        fleet.metrics.count("invalid")
        return error_response(422, problem)
    wait = fleet.per_client.take(limits.key(parsed.client))
    if wait is not None:
        return _too_many(fleet, wait, "this client")
    accepted = store.fold(parsed, network(request.remote_addr))
    fleet.metrics.count("accepted")
    response = Response(json.dumps({"accepted": accepted}), status=202, mimetype="application/json")
    response.headers["Cache-Control"] = "no-store"
    return response


def _refusal(fleet: Fleet) -> Response | None:
    """Refusals made before the body is read: origin, size, type, the network's rate."""
    foreign = core.foreign_origin(state(), request.headers)
    if foreign is not None:
        return error_response(403, foreign)
    size = request.content_length
    if size is None or size > reports.MAX_BYTES:
        fleet.metrics.count("invalid")
        shown = "no Content-Length" if size is None else f"{size} bytes"
        status = 411 if size is None else 413
        return error_response(
            status, f"a fleet report is at most {reports.MAX_BYTES} bytes with a Content-Length header; got {shown}"
        )
    if request.mimetype != "application/json":
        fleet.metrics.count("invalid")
        return error_response(415, f"expected Content-Type application/json, got {request.mimetype or 'none'}")
    wait = fleet.per_network.take(limits.key(network(request.remote_addr)))
    return None if wait is None else _too_many(fleet, wait, "this network")


def _too_many(fleet: Fleet, wait: int, who: str) -> Response:
    fleet.metrics.count("rate_limited")
    response = error_response(429, f"too many fleet reports from {who}; retry in {wait} s")
    response.headers["Retry-After"] = str(wait)
    return response


@blueprint.get("/api/fleet")
def published() -> Response:
    """The fleet's verdicts and times (docs/reference/fleet.md); revalidated on every use. With reports off, 204: no
    fleet, which every page's plan reads on every load (a 404 would put an error in each page's console)."""
    found = _fleet()
    if found is None:
        return Response(status=204, headers={"Cache-Control": "no-cache", "X-Onnxport-Fleet": "off"})
    body = json.dumps(found[0].published(), separators=(",", ":"))
    response = Response(body, mimetype="application/json")
    response.headers["Cache-Control"] = "no-cache"
    response.add_etag()
    response.make_conditional(request)  # a 304 when the client's ETag matches
    return response


def paths() -> JsonObject:
    """These routes for /v2/openapi.json (serving/http/openapi.py); the report's fields: docs/reference/fleet.md."""
    error = path_items.error
    accepted = {"type": "object", "required": ["accepted"], "properties": {"accepted": {"type": "integer"}}}
    return {
        "/api/fleet/reports": {
            "post": {
                "summary": "A browser's report of its runs (docs/reference/fleet.md)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {
                    "202": openapi.json_response(accepted, "the results folded"),
                    "400": error("the body is not JSON, or its JSON is past what a report holds"),
                    "403": error("a page of a foreign origin (cors_origins)"),
                    "404": error("fleet reports are off (setting fleet_reports)"),
                    "411": error("no Content-Length"),
                    "413": error(f"over {reports.MAX_BYTES} bytes"),
                    "415": error("not application/json"),
                    "422": error("JSON, but not a report, or a result names a file the server does not serve"),
                    "429": error("too many reports from this client or network (Retry-After)"),
                },
            }
        },
        "/api/fleet": path_items.json_get(
            "The fleet's published verdicts and times",
            {"type": "object"},
            {"204": {"description": "fleet reports are off"}, "304": path_items.NOT_MODIFIED},
        ),
    }
