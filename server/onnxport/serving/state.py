"""What the blueprints share: settings, the catalog and the session pool of this app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from flask import current_app

from onnxport.repository.store import Repository
from onnxport.serving import batching_policy
from onnxport.serving.batching import DynamicBatcher
from onnxport.serving.catalog import Catalog
from onnxport.serving.sessions import SessionPool


@dataclass
class State:
    settings: dict[str, Any]
    catalog: Catalog
    sessions: SessionPool
    batching: dict[str, Any]  # batching_policy.policy(settings), built once per app


def build(settings: dict[str, Any], batcher: Callable[..., Any] = DynamicBatcher, shared_cores: bool = False) -> State:
    """The catalog and sessions of one server (a Flask app, or one Ray Serve replica with Ray's batcher,
    whose cores are shared with Ray's proxy and other replicas)."""
    catalog = Catalog(Repository(settings["repository"]))
    spinning = {"on": True, "off": False}.get(settings["intra_op_spinning"], not shared_cores)
    sessions = SessionPool(settings["providers"], settings["intra_op_threads"], settings["inter_op_threads"], batcher,
                           spinning)
    catalog.on_reload(sessions.retain)  # a new build releases the sessions of replaced artifacts
    return State(settings, catalog, sessions, batching_policy.policy(settings))


def state() -> State:
    return current_app.extensions["onnxport"]
