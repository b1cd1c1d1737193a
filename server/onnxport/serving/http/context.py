"""The app's State and Ray deployment as the blueprints find them (Flask's current_app, set by create_app): the
one place where serving/state.py's objects meet Flask."""

from __future__ import annotations

from flask import current_app

from onnxport.serving.state import Deployment, State


def state() -> State:
    return current_app.extensions["onnxport"]


def deployment() -> Deployment | None:
    """The deployment this app answers the operator routes for, or None: this process alone (waitress, or a
    Ray replica's operator port)."""
    return current_app.extensions.get("onnxport.deployment")
