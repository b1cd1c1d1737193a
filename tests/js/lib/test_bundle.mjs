// web/lib/dist/onnxport.js is what web/lib/bundle.mjs makes of the sources now, and it exports what index.js does.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BUNDLE, bundle } from "../../../web/lib/bundle.mjs";

test("the committed bundle is the sources' bundle (after a change to web/lib, run node web/lib/bundle.mjs)", async () => {
  const made = await bundle();
  const committed = readFileSync(BUNDLE, "utf8");
  assert.ok(
    made === committed,
    `web/lib/dist/onnxport.js (${committed.length} bytes) is not what the sources make ` +
      `now (${made.length} bytes): run node web/lib/bundle.mjs and commit the file`,
  );
});

test("the bundle exports every name index.js exports", async () => {
  const names = (source) => {
    const list = [...source.matchAll(/export\s*\{([^}]*)\}/g)].flatMap((m) => m[1].split(","));
    return list
      .map((item) =>
        item
          .trim()
          .split(/\s+as\s+/)
          .pop(),
      )
      .filter(Boolean)
      .sort();
  };
  const fromBundle = names(readFileSync(BUNDLE, "utf8"));
  const fromSources = Object.keys(await import("../../../web/lib/index.js")).sort();
  assert.deepEqual(fromBundle, fromSources);
});
