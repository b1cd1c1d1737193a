"""What the blueprints share: settings, the catalog and the session pool of this app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import current_app

from onnxport.serving.catalog import Catalog
from onnxport.serving.sessions import SessionPool


@dataclass
class State:
    settings: dict[str, Any]
    catalog: Catalog
    sessions: SessionPool
    batching: dict[str, Any]  # batching_policy.policy(settings), built once per app


def state() -> State:
    return current_app.extensions["onnxport"]
