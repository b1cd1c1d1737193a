"""Write tests/vectors/manifest_vectors.json: the manifest constants the browser library must hold as the server does.

The schema and version repository/store.py writes, the manifest an empty repository starts with, and the variant
order of repository/variant_table.py, with a list of variant names in reverse and in that order (a name of no
row's last). tests/repository/test_manifest_vectors.py fails when the file is not what this script writes now;
tests/js/lib/files/test_manifest_vectors.mjs holds web/lib/files/manifest.js to it.
Run: .venv/bin/python tests/vectors/make_manifest_vectors.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from onnxport.repository import store, variant_table

OUT = Path(__file__).with_name("manifest_vectors.json")


def build() -> dict[str, Any]:
    names = [*variant_table.NAMES, "a-variant-of-its-own"]
    return {
        "about": "Written by tests/vectors/make_manifest_vectors.py from repository/store.py and variant_table.py.",
        "schema": store.SCHEMA,
        "schema_version": store.SCHEMA_VERSION,
        "empty_manifest": store.empty_manifest(),
        "variant_order": list(variant_table.NAMES),
        "unordered": list(reversed(names)),
        "ordered": sorted(names, key=variant_table.order),
    }


def main() -> None:
    OUT.write_text(json.dumps(build(), indent=2) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
