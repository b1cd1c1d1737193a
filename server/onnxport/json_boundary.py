"""JSON at a boundary: a value as it arrives or leaves, before its fields are known to have a type.

`JsonObject` marks the places where JSON enters or leaves onnxport (a request body, a file read with json.load,
a response, a report written for people or for a browser page) and nothing is yet known of its keys. Code that
reads the fields of a manifest reads its types (repository/manifest.py, repository/variant_record.py) instead.
"""

from typing import Any

JsonObject = dict[str, Any]  # a JSON object at a boundary: its keys and values unchecked
