"""The V2 API as an ASGI (Starlette) app, for Ray Serve, which needs an ASGI ingress.

A thin layer over v2_core, like the Flask blueprint: the same functions, replies and errors. The
protocol work is blocking (onnxruntime), so it runs in Starlette's thread pool. Every response
names the process that answered it (X-Onnxport-Replica), so a client can tell replicas apart.
With a replica registry (ray_replicas.py), /metrics, the statistics and the repository API answer for
every replica of the deployment, not only the one Ray's proxy picked.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Awaitable, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from onnxport.serving import ray_replicas, v2_core
from onnxport.serving.http import repository_api, statistics_api
from onnxport.serving.http.memory import trim_if_large
from onnxport.serving.state import State

REPLICA = f"{socket.gethostname()}:{os.getpid()}"


def _send(reply: v2_core.Reply) -> Response:
    return Response(reply.body, reply.status, {**reply.headers, "X-Onnxport-Replica": REPLICA},
                    media_type=reply.content_type)


def create_asgi_app(state: State, registry: Any = None) -> Starlette:
    """registry: the Ray actor handle of ray_replicas.Registry (the operator routes need it)."""
    extensions = (*repository_api.EXTENSIONS, *statistics_api.EXTENSIONS) if registry is not None else ()

    async def call(work: Callable[[], v2_core.Reply]) -> Response:
        try:
            reply = await run_in_threadpool(work)
        except Exception as exc:  # the same verdicts as the Flask app's error handlers
            reply = v2_core.error_reply(exc) or v2_core.internal_error(exc)
        return _send(reply)

    async def every_replica(work: Awaitable[v2_core.Reply]) -> Response:
        try:
            reply = await work
        except Exception as exc:
            reply = v2_core.error_reply(exc) or v2_core.internal_error(exc)
        return _send(reply)

    def params(request: Request) -> tuple[str, str | None]:
        return request.path_params["model"], request.path_params.get("version")

    async def live(request: Request):
        return await call(lambda: v2_core.live(state))

    async def ready(request: Request):
        return await call(lambda: v2_core.ready(state))

    async def server_metadata(request: Request):
        return await call(lambda: v2_core.server_metadata(state, extensions))

    async def openapi_document(request: Request):
        return await call(lambda: v2_core.Reply(200, v2_core.openapi_document()))

    async def model_metadata(request: Request):
        return await call(lambda: v2_core.model_metadata(state, *params(request)))

    async def model_ready(request: Request):
        return await call(lambda: v2_core.model_ready(state, *params(request)))

    async def infer(request: Request):
        refused = v2_core.foreign_origin(state, request.headers)
        if refused is not None:
            return _send(v2_core.json_reply({"error": refused}, 403))
        limit = state.settings["max_request_bytes"]
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return _send(v2_core.json_reply({"error": "request body too large"}, 413))
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return _send(v2_core.json_reply({"error": "request body too large"}, 413))
        mimetype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        sizes: list[int] = [len(body)]
        try:
            return await call(
                lambda: v2_core.infer(state, *params(request), mimetype, request.headers, bytes(body), sizes))
        finally:
            trim_if_large(max(sizes))

    async def metrics(request: Request):
        return await every_replica(ray_replicas.metrics(registry))

    async def model_statistics(request: Request):
        return await every_replica(ray_replicas.statistics(registry, request.url.path))

    async def repository_index(request: Request):
        return await every_replica(ray_replicas.index(registry))

    async def load_or_unload(request: Request):
        refused = v2_core.foreign_origin(state, request.headers)
        if refused is not None:
            return _send(v2_core.json_reply({"error": refused}, 403))
        authorization = request.headers.get("authorization", "")

        async def checked() -> v2_core.Reply:
            repository_api.authorize(state, authorization)  # the 403/401 here, before any replica is asked
            return await ray_replicas.load_or_unload(registry, request.url.path, authorization)

        return await every_replica(checked())

    async def not_found(request: Request, exc: Any):
        status = getattr(exc, "status_code", 404)
        message = {404: "no such resource", 405: "method not allowed"}.get(status, "bad request")
        return _send(v2_core.json_reply({"error": message}, status))

    model, version = "/v2/models/{model}", "/v2/models/{model}/versions/{version}"
    operator = [  # /v2/models/stats before /v2/models/{model}
        Route("/metrics", metrics), Route("/v2/models/stats", model_statistics),
        Route(f"{model}/stats", model_statistics), Route(f"{version}/stats", model_statistics),
        Route("/v2/repository/index", repository_index, methods=["POST"]),
        Route("/v2/repository/models/{model}/load", load_or_unload, methods=["POST"]),
        Route("/v2/repository/models/{model}/unload", load_or_unload, methods=["POST"]),
    ] if registry is not None else []
    routes = [*operator,
        Route("/v2/health/live", live), Route("/v2/health/ready", ready), Route("/v2", server_metadata),
        Route("/v2/openapi.json", openapi_document),
        Route(model, model_metadata), Route(version, model_metadata),
        Route(f"{model}/ready", model_ready), Route(f"{version}/ready", model_ready),
        Route(f"{model}/infer", infer, methods=["POST"]), Route(f"{version}/infer", infer, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
