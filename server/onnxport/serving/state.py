"""What the blueprints share: settings, the catalog and the session pool of this app, and on Ray Serve the
deployment whose replicas the operator routes answer for. No web framework here: the blueprints find the app's
State through http/context.py, and the V2 core (v2/core.py) is handed it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from onnxport.repository.store import Repository
from onnxport.serving.config import ServerSettings
from onnxport.serving.fleet.store import FleetStore
from onnxport.serving.generate.metrics import GenerationMetrics
from onnxport.serving.generate.runs import Service
from onnxport.serving.models import batching_policy
from onnxport.serving.models.batching import DynamicBatcher
from onnxport.serving.models.catalog import Catalog
from onnxport.serving.models.sessions import SessionPool
from onnxport.serving.statistics import Recorder


@dataclass
class State:
    settings: ServerSettings
    catalog: Catalog
    sessions: SessionPool
    batching: batching_policy.BatchingPolicy  # batching_policy.policy(settings), built once per app
    recorder: Recorder | None = None  # /metrics and Triton's statistics (set by record_statistics)
    fleet: FleetStore | None = None  # the fleet's votes (None: fleet_reports is off)
    fleet_metrics: Any = None  # http/fleet.py's counters, registered once per State
    generation: Service | None = None  # the generation models and their budgets (None: a State built without)


def build(settings: ServerSettings, batcher: Callable[..., Any] = DynamicBatcher, engine: str = "waitress") -> State:
    """The catalog and sessions of one server: a Flask app, or one Ray Serve replica (engine "ray") with
    Ray's batcher, the bench's Ray verdicts, and cores shared with Ray's proxy and other replicas."""
    catalog = Catalog(Repository(settings["repository"]))
    spinning = {"on": True, "off": False}.get(settings["intra_op_spinning"], engine != "ray")
    sessions = SessionPool(
        settings["providers"], settings["intra_op_threads"], settings["inter_op_threads"], batcher, spinning
    )
    catalog.on_reload(sessions.retain)  # a new build releases the sessions of replaced artifacts
    policy = batching_policy.policy(settings, engine)
    # Opens the generation models, whose sessions run as the V2 models' do: a folder that is not one stops the start.
    generation = Service.of(settings, sessions.session_settings())
    return State(settings, catalog, sessions, policy, fleet=fleet_store(settings), generation=generation)


def fleet_store(settings: ServerSettings) -> FleetStore | None:
    if not settings["fleet_reports"]:
        return None
    path = settings["fleet_db"] or Path(settings["repository"]) / "fleet.sqlite3"
    return FleetStore(
        path,
        k=settings["fleet_min_clients"],
        max_clients=settings["fleet_max_clients"],
        max_age_days=settings["fleet_max_age_days"],
        max_groups=settings["fleet_max_groups"],
        network_groups=settings["fleet_network_groups"],
    )


def record_statistics(state: State) -> Recorder:
    """The State's Recorder (/metrics, Triton's statistics), built once: a Flask app's, or a Ray replica's,
    which its public app and the app of its operator port share."""
    if state.recorder is None:
        recorder = state.recorder = Recorder(lambda: len(state.sessions.loaded()))
        state.sessions.on_load = recorder.session_loaded
        if state.generation is not None:
            state.generation.metrics = GenerationMetrics(recorder.registry)
    return state.recorder


class Deployment(Protocol):
    """The operator routes' answers for every replica of a Ray Serve deployment (ray/replicas.py)."""

    def metrics(self) -> Any: ...
    def statistics(self, path: str) -> Any: ...
    def index(self) -> Any: ...
    def load_or_unload(self, path: str, authorization: str) -> Any: ...
