// web/lib/files/manifest.js holds the server's manifest constants (tests/vectors/manifest_vectors.json, written by
// tests/vectors/make_manifest_vectors.py from repository/store.py and variant_table.py): the schema it reads is the
// one the build writes, and it lists variants in variant_table's order.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { checkManifest, SCHEMA, SCHEMA_VERSION, VARIANT_ORDER, variants } from "../../../../web/lib/files/manifest.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/manifest_vectors.json", import.meta.url), "utf8"));

test("the library reads the schema the server writes, and the server's empty manifest", () => {
  assert.deepEqual(
    [SCHEMA, SCHEMA_VERSION],
    [VECTORS.schema, VECTORS.schema_version],
    "web/lib/files/manifest.js reads another manifest schema than repository/store.py writes",
  );
  checkManifest(VECTORS.empty_manifest, "the server's empty manifest");
});

test("the library lists variants in variant_table's order, a variant of no row's last", () => {
  assert.deepEqual(
    [...VARIANT_ORDER],
    VECTORS.variant_order,
    "web/lib/files/manifest.js's VARIANT_ORDER is not repository/variant_table.py's VARIANTS order",
  );
  const model = { variants: Object.fromEntries(VECTORS.unordered.map((name) => [name, { status: "ok" }])) };
  assert.deepEqual(
    variants(model).map(([name]) => name),
    VECTORS.ordered,
  );
});
