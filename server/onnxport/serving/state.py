"""What the blueprints share: settings, the catalog and the session pool of this app, and on Ray Serve the
deployment whose replicas the operator routes answer for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from flask import current_app

from onnxport.repository.store import Repository
from onnxport.serving import batching_policy
from onnxport.serving.batching import DynamicBatcher
from onnxport.serving.catalog import Catalog
from onnxport.serving.sessions import SessionPool
from onnxport.serving.statistics import Recorder


@dataclass
class State:
    settings: dict[str, Any]
    catalog: Catalog
    sessions: SessionPool
    batching: dict[str, Any]  # batching_policy.policy(settings), built once per app
    recorder: Recorder | None = None  # /metrics and Triton's statistics (set by record_statistics)


def build(settings: dict[str, Any], batcher: Callable[..., Any] = DynamicBatcher, engine: str = "waitress") -> State:
    """The catalog and sessions of one server: a Flask app, or one Ray Serve replica (engine "ray") with
    Ray's batcher, the bench's Ray verdicts, and cores shared with Ray's proxy and other replicas."""
    catalog = Catalog(Repository(settings["repository"]))
    spinning = {"on": True, "off": False}.get(settings["intra_op_spinning"], engine != "ray")
    sessions = SessionPool(settings["providers"], settings["intra_op_threads"], settings["inter_op_threads"], batcher,
                           spinning)
    catalog.on_reload(sessions.retain)  # a new build releases the sessions of replaced artifacts
    return State(settings, catalog, sessions, batching_policy.policy(settings, engine))


def record_statistics(state: State) -> Recorder:
    """The State's Recorder (/metrics, Triton's statistics), built once: a Flask app's, or a Ray replica's,
    which its public app and the app of its operator port share."""
    if state.recorder is None:
        recorder = state.recorder = Recorder(lambda: len(state.sessions.loaded()))
        state.sessions.on_load = recorder.session_loaded
    return state.recorder


def state() -> State:
    return current_app.extensions["onnxport"]


class Deployment(Protocol):
    """The operator routes' answers for every replica of a Ray Serve deployment (ray/replicas.py)."""

    def metrics(self) -> Any: ...
    def statistics(self, path: str) -> Any: ...
    def index(self) -> Any: ...
    def load_or_unload(self, path: str, authorization: str) -> Any: ...


def deployment() -> Deployment | None:
    """The deployment this app answers the operator routes for, or None: this process alone (waitress, or a
    Ray replica's operator port)."""
    return current_app.extensions.get("onnxport.deployment")
