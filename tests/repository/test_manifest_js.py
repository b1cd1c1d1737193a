"""The browser library's manifest reader (web/lib/files/manifest.js, run by node) holds the server's constants: the
schema it reads is the one the build writes, and it lists variants in variant_table's order."""

from __future__ import annotations

import json
import subprocess

from onnxport.project import PROJECT_ROOT
from onnxport.repository import store, variant_table

SCRIPT = """
import { readFileSync } from "node:fs";
import { checkManifest, SCHEMA, SCHEMA_VERSION, VARIANT_ORDER, variants } from "%(lib)s";
const { manifest, names } = JSON.parse(readFileSync(0, "utf8"));
checkManifest(manifest, "the server's empty manifest");
const model = { variants: Object.fromEntries([...names].reverse().map((name) => [name, { status: "ok" }])) };
process.stdout.write(JSON.stringify({ SCHEMA, SCHEMA_VERSION, VARIANT_ORDER, read: variants(model).map(([n]) => n) }));
"""


def test_the_library_reads_the_schema_the_server_writes_and_orders_variants_alike():
    script = SCRIPT % {"lib": (PROJECT_ROOT / "web/lib/files/manifest.js").as_uri()}
    names = [*variant_table.NAMES, "a-variant-of-its-own"]
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        input=json.dumps({"manifest": store.empty_manifest(), "names": names}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    library = json.loads(done.stdout)
    assert (library["SCHEMA"], library["SCHEMA_VERSION"]) == (store.SCHEMA, store.SCHEMA_VERSION), (
        "web/lib/files/manifest.js reads another manifest schema than repository/store.py writes"
    )
    assert library["VARIANT_ORDER"] == list(variant_table.NAMES), (
        "web/lib/files/manifest.js's VARIANT_ORDER is not repository/variant_table.py's VARIANTS order"
    )
    assert library["read"] == sorted(names, key=variant_table.order)
