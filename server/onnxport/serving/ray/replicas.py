"""The operator's side of a Ray Serve deployment: every replica's metrics, statistics and repository API,
answered for the whole deployment.

Ray's proxy sends a request to ONE replica, but each replica counts and loads only for itself. So every
replica also serves the Flask app over its own State on an operator port (its node's IP, a free port,
waitress in a daemon thread; that app answers for this replica alone) and registers that URL in a small
named Ray actor, the registry. The replica that Ray's proxy picks for `GET /metrics`,
`GET /v2/models/.../stats`, `POST /v2/repository/...` (its public app's Deployment, below) asks every
registered replica's operator port at once and merges the answers:
metrics with a `replica` label on every sample (a scraper sums over it), statistics summed, a model READY
only when every replica holds it, load/unload done everywhere. A replica that cannot be reached (killed,
its node gone) is dropped from the registry; a live one registers again every HEARTBEAT_S seconds.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from onnxport.json_boundary import JsonObject
from onnxport.serving.state import State, record_statistics
from onnxport.serving.v2.core import Reply, json_reply

NAMESPACE = "onnxport"  # the Ray namespace of the registries, so that the driver finds them by name
READ_TIMEOUT_S = 5.0  # a replica that does not answer a scrape in this time is left out of it
LOAD_TIMEOUT_S = 300.0  # load creates sessions: large models take a while
HEARTBEAT_S = 10.0
NOT_EVERYWHERE = "loaded on {held} of {total} replicas: POST .../load loads it on all"


class Registry:
    """The Ray actor (one per application and deployment) mapping replica -> operator URL."""

    def __init__(self) -> None:
        self._urls: dict[str, str] = {}

    def register(self, replica: str, url: str) -> None:
        self._urls[replica] = url

    def drop(self, replica: str, url: str) -> None:
        if self._urls.get(replica) == url:  # not a replica that registered again since
            del self._urls[replica]

    def urls(self) -> dict[str, str]:
        return dict(self._urls)


def registry_name(app_name: str, deployment: str) -> str:
    return f"onnxport-replicas:{app_name}:{deployment}"


def registry(app_name: str, deployment: str) -> Any:
    """The registry's actor handle, created by the first replica that asks. Detached: it outlives any one
    replica (a killed replica must not take it along); serve_on_ray kills it when the server stops."""
    import ray

    options = {
        "name": registry_name(app_name, deployment),
        "namespace": NAMESPACE,
        "lifetime": "detached",
        "get_if_exists": True,
        "num_cpus": 0,
    }
    return ray.remote(Registry).options(**options).remote()


def remove_registry(app_name: str, deployment: str) -> None:
    import ray

    try:
        ray.kill(ray.get_actor(registry_name(app_name, deployment), namespace=NAMESPACE))
    except ValueError:  # never created: no replica started
        pass


class OperatorPort:
    """This replica's Flask app (the waitress server's routes) over its State, on host and a free port."""

    def __init__(self, state: State, host: str, replica: str, registry_handle: Any) -> None:
        from onnxport.serving.app import create_app
        from onnxport.serving.waitress.serve import background_server

        record_statistics(state)
        self.server: Any = background_server(create_app(state=state), host, threads=4)
        self.replica = replica
        self.url = f"http://{host}:{self.server.effective_port}"
        self.registry = registry_handle
        self._stop = threading.Event()
        threading.Thread(target=self.server.run, name="onnxport-operator-port", daemon=True).start()
        self.register()
        threading.Thread(target=self._heartbeat, name="onnxport-registry-heartbeat", daemon=True).start()

    def register(self) -> None:
        import ray

        ray.get(self.registry.register.remote(self.replica, self.url))

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self.register()
            except Exception:  # the registry is gone: the application is being deleted
                return

    def close(self) -> None:
        self._stop.set()
        try:
            self.registry.drop.remote(self.replica, self.url)
        finally:
            self.server.close()


@dataclass
class Answer:
    replica: str
    status: int
    body: bytes


def _fetch(url: str, method: str, headers: dict[str, str], timeout: float) -> tuple[int, bytes] | None:
    """(status, body), or None when nothing answered there (refused, timed out, unreachable)."""
    request = urllib.request.Request(url, data=b"" if method == "POST" else None, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read()
    except OSError:  # URLError, ConnectionError, TimeoutError: no replica there any more
        return None


def ask(
    registry_handle: Any, method: str, path: str, headers: dict[str, str] | None = None, timeout: float = READ_TIMEOUT_S
) -> list[Answer]:
    """Every registered replica's answer to one request on its operator port, asked concurrently; the
    replicas that do not answer are dropped from the registry. Blocking: called in a request's thread."""
    import ray

    members: dict[str, str] = ray.get(registry_handle.urls.remote())
    with ThreadPoolExecutor(max(1, len(members))) as pool:
        results = list(pool.map(lambda url: _fetch(url + path, method, headers or {}, timeout), members.values()))
    answers = []
    for (replica, url), result in zip(members.items(), results):
        if result is None:
            registry_handle.drop.remote(replica, url)
        else:
            answers.append(Answer(replica, *result))
    return answers


def _first_failure(answers: list[Answer]) -> Reply | None:
    if not answers:
        return json_reply({"error": "no replica answered; retry once Ray Serve has started them"}, 503)
    failed = next((a for a in answers if a.status != 200), None)
    return None if failed is None else Reply(failed.status, failed.body)


def merge_metrics(answers: list[tuple[str, str]]) -> bytes:
    """(replica, Prometheus text) pairs as one exposition: each family once, its samples from every
    replica with a `replica` label added; types and help kept."""
    families: dict[str, Metric] = {}
    for replica, text in answers:
        for family in text_string_to_metric_families(text):
            merged = families.setdefault(
                family.name, Metric(family.name, family.documentation, family.type, family.unit)
            )
            merged.samples += [s._replace(labels={**s.labels, "replica": replica}) for s in family.samples]

    class Merged:
        def collect(self) -> list[Metric]:
            return list(families.values())

    return generate_latest(Merged())


def _summed(a: Any, b: Any, key: str = "") -> Any:
    """Triton's statistics of two replicas as one: counts and ns added, last_inference the latest."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {**b, **{k: _summed(v, b[k], k) if k in b else v for k, v in a.items()}}
    if isinstance(a, list) and isinstance(b, list):  # batch_stats: one entry per batch size
        by_size = {entry.get("batch_size"): entry for entry in a if isinstance(entry, dict)}
        for entry in b:
            size = entry.get("batch_size") if isinstance(entry, dict) else None
            by_size[size] = _summed(by_size[size], entry) if size in by_size else entry
        return sorted(by_size.values(), key=lambda e: e.get("batch_size") or 0)
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        return {"last_inference": max(a, b), "batch_size": a}.get(key, a + b)
    return a  # names and versions


def sum_statistics(bodies: list[JsonObject]) -> JsonObject:
    rows: dict[tuple[str, str], JsonObject] = {}
    for body in bodies:
        for row in body["model_stats"]:
            key = (row["name"], row["version"])
            rows[key] = _summed(rows[key], row) if key in rows else row
    return {"model_stats": list(rows.values())}


def merge_index(indexes: list[list[dict[str, str]]]) -> list[dict[str, str]]:
    """A version is READY when every replica holds its session; else the reason of one that does not."""
    rows: dict[tuple[str, str], list[dict[str, str]]] = {}
    for index in indexes:
        for row in index:
            rows.setdefault((row["name"], row["version"]), []).append(row)
    merged = []
    for seen in rows.values():
        held = sum(row["state"] == "READY" for row in seen)
        if held == len(indexes):
            merged.append(seen[0])
            continue
        missing = next(row for row in seen if row["state"] != "READY")
        reason = NOT_EVERYWHERE.format(held=held, total=len(indexes)) if held else missing["reason"]
        merged.append({**missing, "state": "UNAVAILABLE", "reason": reason})
    return merged


class Deployment:
    """The operator routes' answers for the whole deployment, which the public Flask app of a replica gives
    in place of its own (app.create_app's `deployment`); the operator port's app answers for itself."""

    def __init__(self, registry_handle: Any) -> None:
        self.registry = registry_handle

    def metrics(self) -> Reply:
        answers = [a for a in ask(self.registry, "GET", "/metrics") if a.status == 200]
        text = merge_metrics([(a.replica, a.body.decode()) for a in answers])
        return Reply(200, text, CONTENT_TYPE_LATEST)

    def statistics(self, path: str) -> Reply:
        answers = ask(self.registry, "GET", path)
        failed = _first_failure(answers)  # a 404 for a name no replica serves
        return failed or json_reply(sum_statistics([json.loads(a.body) for a in answers]))

    def index(self) -> Reply:
        answers = ask(self.registry, "POST", "/v2/repository/index")
        failed = _first_failure(answers)
        return failed or json_reply(merge_index([json.loads(a.body) for a in answers]))

    def load_or_unload(self, path: str, authorization: str) -> Reply:
        """Forwarded with the token (checked by the caller first) to every replica: 200 only if all did it."""
        answers = ask(self.registry, "POST", path, {"Authorization": authorization}, LOAD_TIMEOUT_S)
        return _first_failure(answers) or json_reply({})
