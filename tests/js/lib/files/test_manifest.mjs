// web/lib/files/manifest.js: the schema check, variant order, what is served, dtype names.
import assert from "node:assert/strict";
import { test } from "node:test";

import { checkManifest, served, tensorType, VARIANT_ORDER, variants } from "../../../../web/lib/files/manifest.js";

const URL_ = "https://models.example/api/manifest";

test("checkManifest returns a version-2 onnxport manifest as it is, empty or not", () => {
  const body = { schema: "onnxport.manifest", schema_version: 3, models: {} };
  assert.equal(checkManifest(body, URL_), body);
});

test("checkManifest refuses other schemas and versions, naming the URL and what it got", () => {
  assert.throws(
    () => checkManifest({ schema: "onnxport.manifest", schema_version: 1, models: {} }, URL_),
    new Error(`${URL_}: manifest schema onnxport.manifest v1; this library reads onnxport.manifest v3`),
  );
  assert.throws(() => checkManifest({ schema: "other", schema_version: 2 }, URL_), /manifest schema other v2;/);
  assert.throws(() => checkManifest({ schema: "onnxport.manifest", schema_version: "3" }, URL_), /v3; this library/);
});

test("checkManifest refuses a body that is not a manifest at all", () => {
  for (const body of [null, undefined, {}, [], "manifest"]) {
    assert.throws(
      () => checkManifest(body, URL_),
      /manifest schema undefined vundefined; this library reads onnxport\.manifest v3/,
    );
  }
});

test("VARIANT_ORDER is the documented order, frozen", () => {
  assert.deepEqual(VARIANT_ORDER, ["fp32", "fp16", "int8-dynamic", "int8-static", "int8-weights", "int4"]);
  assert.ok(Object.isFrozen(VARIANT_ORDER));
});

test("variants come in VARIANT_ORDER whatever the manifest's key order", () => {
  const model = {
    variants: {
      "int8-static": { status: "ok" },
      fp16: { status: "rejected" },
      fp32: { status: "ok" },
      "int8-dynamic": { status: "skipped" },
    },
  };
  const ordered = variants(model);
  assert.deepEqual(
    ordered.map(([name]) => name),
    ["fp32", "fp16", "int8-dynamic", "int8-static"],
  );
  assert.equal(ordered[1][1], model.variants.fp16, "each entry is [name, record]");
});

test("served: only status ok, in order; none when there is nothing", () => {
  const model = {
    variants: {
      "int8-dynamic": { status: "ok" },
      fp16: { status: "rejected" },
      fp32: { status: "ok" },
      "int8-static": { status: "skipped" },
    },
  };
  assert.deepEqual(served(model), ["fp32", "int8-dynamic"]);
  assert.deepEqual(served({ variants: {} }), []);
  assert.deepEqual(variants({ variants: {} }), []);
  assert.deepEqual(served({ variants: { fp32: { status: "rejected" } } }), []);
});

test("a variant name the library does not know sorts after the known ones", () => {
  const model = { variants: { int4: { status: "ok" }, fp32: { status: "ok" } } };
  assert.deepEqual(served(model), ["fp32", "int4"]);
});

test("tensorType maps numpy dtype names to onnxruntime-web's", () => {
  for (const dtype of [
    "float32",
    "float64",
    "float16",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "bool",
  ]) {
    assert.equal(tensorType(dtype), dtype);
  }
});

test("tensorType refuses a dtype the browser has no tensor type for", () => {
  for (const dtype of ["complex64", "str", "object", "bfloat16", "", undefined]) {
    assert.throws(() => tensorType(dtype), new Error(`dtype ${dtype} has no browser tensor type`));
  }
});

test("tensorType refuses names of Object.prototype", () => {
  assert.throws(() => tensorType("constructor"), /has no browser tensor type/);
  assert.throws(() => tensorType("toString"), /has no browser tensor type/);
});
