// web/lib/choice/runtimes.js names the browser runtimes as the Python side does (tests/vectors/runtime_vectors.json,
// written by tests/vectors/make_runtime_vectors.py from server/onnxport/accuracy/browser_runtimes.py): the same rows,
// providers and flags in the same order, then the server's row, and the checked ones in the order check runs them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { BROWSER, CHECKED, RUNTIMES } from "../../../../web/lib/choice/runtimes.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/runtime_vectors.json", import.meta.url), "utf8"));

test("the rows are the Python side's runtimes, with their provider and flags, then the server", () => {
  assert.deepEqual(
    RUNTIMES.map(({ key, provider, checked, gpu }) => ({ key, provider, checked, gpu })),
    VECTORS.rows,
  );
});

test("the browser runtimes and the checked ones are the Python side's, in its order", () => {
  assert.deepEqual([...BROWSER], VECTORS.browser);
  assert.deepEqual([...CHECKED], VECTORS.checked);
});
