// web/lib/verification/judgement.js fp32Floor on the vectors tests/accuracy/test_fp32_floor.py holds Python's twin to.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { fp32Floor } from "../../../../web/lib/verification/judgement.js";

const vectors = JSON.parse(readFileSync(new URL("../../../vectors/fp32_floor_vectors.json", import.meta.url), "utf8"));

for (const c of vectors) {
  test(`fp32Floor: ${c.name}`, () => {
    assert.deepEqual(fp32Floor(c.table, { validation: c.validation ?? undefined }), c.floor);
  });
}

test("fp32Floor: no table entry is no floor", () => {
  assert.equal(fp32Floor(undefined, { validation: { tolerance: { abs: 1, rel: 1 } } }), null);
});
