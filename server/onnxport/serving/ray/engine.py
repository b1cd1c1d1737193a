"""`onnxport serve --engine ray`: the V2 API as a Ray Serve application, on a local or existing cluster.

Each replica is one actor holding its own State (catalog and sessions over the repository folder,
which every node sees at the same path, or which it first fills from `artifacts_url` with every
file's sha256 verified) and the waitress server's own Flask app (app.py) behind a WSGI-to-ASGI adapter
(a2wsgi), so both engines serve one route table: the V2 API, the files, the web app, CORS. Ray's proxy routes
HTTP to the replicas. Each also serves the Flask app on an operator port of its node, which the public
/metrics, statistics and repository routes ask on every replica (replicas.py). Without --address, a local
single-node cluster is started in a temporary folder and stopped with the server.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import tempfile
import time
from typing import Any, cast

from onnxport.errors import OnnxportError, UsageError
from onnxport.json_boundary import JsonObject
from onnxport.serving.config import ServerSettings

APP_NAME = "onnxport"
DEPLOYMENT = "v2"
# Requests one replica works on at once; Ray queues the rest. At least max_batch (32 by default),
# so that a batch can fill.
MAX_ONGOING = 32


class V2Replica:
    """One replica: builds its State in the actor, then answers every HTTP request through the Flask app."""

    def __init__(self, settings: ServerSettings, max_ongoing: int = MAX_ONGOING):
        import ray
        from a2wsgi import WSGIMiddleware
        from ray import serve

        from onnxport.repository import mirror
        from onnxport.serving import state
        from onnxport.serving.app import create_app
        from onnxport.serving.ray import replicas
        from onnxport.serving.ray.batching import serve_batcher
        from onnxport.serving.ray.responses import Responder, with_client_check

        if url := settings.get("artifacts_url"):  # a node without the repository folder: a verified local copy
            mirror.sync(url, settings["repository"])
        self.loop: asyncio.AbstractEventLoop | None = None  # the replica's, known at its first request
        replica_state = state.build(settings, serve_batcher(self._running_loop), engine="ray")
        state.record_statistics(replica_state)
        context = serve.get_replica_context()
        registry = replicas.registry(context.app_name, context.deployment)
        name = f"{socket.gethostname()}:{os.getpid()}"
        # The operator port listens on the node's address: the replica that Ray's proxy picks reaches it there.
        self.operator_port = replicas.OperatorPort(replica_state, ray.util.get_node_ip_address(), name, registry)
        app = create_app(state=replica_state, deployment=replicas.Deployment(registry), replica=name)
        # A request holds its thread while it waits for its batch: as many threads as requests Ray lets in.
        self.app: Any = WSGIMiddleware(cast(Any, with_client_check(app)), workers=max_ongoing)
        self.responder = Responder(self.app)

    def __del__(self) -> None:  # Ray Serve calls it when it stops the replica
        operator_port = getattr(self, "operator_port", None)
        if operator_port is not None:
            operator_port.close()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        # A batcher is made for a request, so after __call__ has recorded the loop.
        if self.loop is None:
            raise RuntimeError("the replica's event loop is not known before its first request")
        return self.loop

    async def __call__(self, request):
        """The app's answer: whole, or a generation's event stream chunk by chunk (ray/responses.py)."""
        self.loop = self.loop or asyncio.get_running_loop()
        return await self.responder.answer(request)


def parse_autoscale(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    low, sep, high = text.partition(":")
    if not sep or not low.isdigit() or not high.isdigit() or not 1 <= int(low) <= int(high):
        raise UsageError(f"--autoscale {text!r}: expected MIN:MAX replicas, 1 <= MIN <= MAX (e.g. 1:4)")
    return int(low), int(high)


def deployment_options(replicas: int, autoscale: tuple[int, int] | None, max_ongoing: int) -> JsonObject:
    # num_cpus 0: onnxruntime's threads are ours to size (intra_op_threads), not Ray's CPU slots.
    options: JsonObject = {"ray_actor_options": {"num_cpus": 0}, "max_ongoing_requests": max_ongoing}
    if autoscale is not None:
        options["autoscaling_config"] = {"min_replicas": autoscale[0], "max_replicas": autoscale[1]}
    else:
        options["num_replicas"] = replicas
    return options


def app(args: JsonObject):  # a Serve config's `args`, as its file gives them
    """The Ray Serve application builder that a Serve config names (`import_path:
    onnxport.serving.ray.engine:app`, `args`: settings as in the config file, e.g. `repository`);
    replicas and autoscaling come from the config's `deployments` entry."""
    from ray import serve

    from onnxport.serving import config

    deployment = serve.deployment(name=DEPLOYMENT, ray_actor_options={"num_cpus": 0})(V2Replica)
    return deployment.bind(config.load(args))


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def serve_on_ray(
    settings: ServerSettings,
    replicas: int = 1,
    autoscale: tuple[int, int] | None = None,
    address: str | None = None,
    max_ongoing: int = MAX_ONGOING,
) -> None:
    try:
        import a2wsgi  # noqa: F401  (each replica's adapter: a missing one is this line, not a replica's crash)
        import ray
        from ray import serve
    except ImportError as exc:
        raise OnnxportError("--engine ray needs Ray Serve: pip install -e '.[ray]'") from exc
    if replicas < 1 or max_ongoing < 1:
        raise UsageError(f"--replicas {replicas}, --max-ongoing-requests {max_ongoing}: each at least 1")
    if (url := settings.get("artifacts_url")) and not address:
        # The replicas of a local cluster share this folder: copying it here first makes a bad URL or
        # an altered file a one-line error before any cluster starts.
        from onnxport.repository import mirror

        copied = mirror.sync(url, settings["repository"])
        print(
            f"onnxport: copied {settings['artifacts_url']} into {settings['repository']}: "
            f"{copied['downloaded']} files downloaded ({copied['bytes']:,} bytes), {copied['present']} present, "
            "every sha256 verified",
            flush=True,
        )
        # The replicas serve this copy as it is: each syncing again would re-hash every file.
        settings = {**settings, "artifacts_url": None}
    if address:
        ray.init(address=address, configure_logging=False, log_to_driver=False)
    else:
        ray.init(
            address="local",
            include_dashboard=False,
            configure_logging=False,
            log_to_driver=False,
            _temp_dir=tempfile.mkdtemp(prefix="onnxport-ray-"),
        )
    # SIGTERM (a service manager, a test) stops the cluster as Ctrl-C does; set after ray.init, whose
    # core installs a crash handler for it.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        serve.start(http_options={"host": settings["host"], "port": settings["port"]})
        options = deployment_options(replicas, autoscale, max_ongoing)
        deployment = serve.deployment(name=DEPLOYMENT, **options)(V2Replica)
        serve.run(deployment.bind(dict(settings), max_ongoing), name=APP_NAME, route_prefix="/")
        print(
            f"onnxport: serving the V2 API of {settings['repository']} on Ray Serve "
            f"({f'{autoscale[0]}-{autoscale[1]}' if autoscale else replicas} replicas) at "
            f"http://{settings['host']}:{settings['port']}/v2",
            flush=True,
        )
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        from onnxport.serving.ray.replicas import remove_registry

        serve.shutdown()
        remove_registry(APP_NAME, DEPLOYMENT)  # detached: it would outlive the application
        ray.shutdown()
