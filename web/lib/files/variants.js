// The variants a build makes, as the manifest names them. Generated from server/onnxport/variants.py by
// scripts/generate/js_variants.py: edit the table there and run the script; a test fails when this file differs.

/**
 * A variant's name: its key in a model's `variants`, its version in the V2 API.
 * @typedef {"fp32"|"fp16"|"int8-dynamic"|"int8-static"|"int8-weights"|"int4"} VariantName
 */

// In the order people read them (the manifest's JSON is key-sorted); other names sort after them.
export const VARIANT_ORDER = Object.freeze(["fp32", "fp16", "int8-dynamic", "int8-static", "int8-weights", "int4"]);
