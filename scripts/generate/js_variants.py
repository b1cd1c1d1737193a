"""Write web/lib/files/variants.js, the browser library's variant names, from the server's table (onnxport/variants.py).

    python scripts/generate/js_variants.py          rewrite web/lib/files/variants.js
    python scripts/generate/js_variants.py --check  exit 1 if it differs from what the table gives
                                                    (tests/repository/test_variants_table.py)

The JavaScript is committed, so the library (also an npm package) needs no build step; the check keeps the
two languages from drifting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from generated_file import write_or_check

from onnxport.variants import VARIANTS

OUT = Path(__file__).resolve().parents[2] / "web" / "lib" / "files" / "variants.js"
WIDTH = 120  # biome.json's line width: a longer list is written one name a line, as Biome writes it


def _frozen_list(head: str, names: list[str]) -> str:
    line = f"{head}Object.freeze([{', '.join(json.dumps(n) for n in names)}]);"
    if len(line) <= WIDTH:
        return line
    return f"{head}Object.freeze([\n" + "".join(f"  {json.dumps(n)},\n" for n in names) + "]);"


def render() -> str:
    names = [v.name for v in VARIANTS]
    union = "|".join(json.dumps(n) for n in names)
    return f"""\
// The variants a build makes, as the manifest names them. Generated from server/onnxport/variants.py by
// scripts/generate/js_variants.py: edit the table there and run the script; a test fails when this file differs.

/**
 * A variant's name: its key in a model's `variants`, its version in the V2 API.
 * @typedef {{{union}}} VariantName
 */

// In the order people read them (the manifest's JSON is key-sorted); other names sort after them.
{_frozen_list("export const VARIANT_ORDER = ", names)}
"""


def main(argv: list[str]) -> int:
    return write_or_check(
        argv,
        OUT,
        render(),
        source="server/onnxport/variants.py",
        script="scripts/generate/js_variants.py",
        usage=__doc__,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
