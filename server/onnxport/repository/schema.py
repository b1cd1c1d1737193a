"""The manifest's JSON Schema, generated from the types of repository/manifest.py.

pydantic writes it (`TypeAdapter(Manifest).json_schema()`, draft 2020-12); this module names it
(`$id`, `title`, the manifest schema version) and drops pydantic's per-property titles, which only
restate the key. The server publishes it at GET /api/manifest.schema.json.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from onnxport.repository import manifest, store

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = f"urn:onnxport:schema:{store.SCHEMA}:{store.SCHEMA_VERSION}"


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of manifest.json (a fresh copy: callers may change it)."""
    return copy.deepcopy(_generated())


@functools.cache
def _generated() -> dict[str, Any]:
    from pydantic import (
        TypeAdapter,  # only the schema needs pydantic, not the readers of the types
    )

    generated = _without_property_titles(TypeAdapter(manifest.Manifest).json_schema())
    generated.pop("title", None)
    return {
        "$schema": DIALECT,
        "$id": SCHEMA_ID,
        "title": f"{store.SCHEMA} version {store.SCHEMA_VERSION}",
        "description": "manifest.json of an onnxport model repository (docs/reference/manifest.md). "
        "Generated from server/onnxport/repository/manifest.py.",
        "x-schema-version": store.SCHEMA_VERSION,
        **{k: v for k, v in generated.items() if k != "description"},
    }


def _without_property_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_property_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _drop_title(_without_property_titles(sub)) for name, sub in value.items()}
        else:
            out[key] = _without_property_titles(value)
    return out


def _drop_title(node: Any) -> Any:
    return {k: v for k, v in node.items() if k != "title"} if isinstance(node, dict) else node
