// The manifest the build wrote (docs/reference/manifest.md): checked once, then asked.
import { TENSOR_TYPES } from "../tensors/dtypes.js";

/**
 * A file of the repository as the manifest records it: a variant's file, one of its forms, a reference.
 * @typedef {object} FileRecord
 * @property {string} file the path inside the repository
 * @property {string} sha256
 * @property {number} [bytes]
 */
/**
 * A variant of a model (docs/reference/manifest.md has every field): its file, `status` "ok" when served, and what
 * the build measured and recorded about it.
 * @typedef {FileRecord & {status: string, reference?: FileRecord | null, [field: string]: any}} VariantRecord
 */
/**
 * A model of the manifest: its name, task and variants by name (docs/reference/manifest.md has every field).
 * @typedef {{name: string, task: string, variants: Record<string, VariantRecord>, assets?: Record<string, FileRecord>,
 *   pipeline?: import("../pipelines/pipeline.js").PipelineSpec, [field: string]: any}} ModelEntry
 */
/**
 * The manifest (GET <server>/api/manifest), schema onnxport.manifest v3.
 * @typedef {{schema: string, schema_version: number, models: Record<string, ModelEntry>, [field: string]: any}} Manifest
 */

// The schema this library reads and the variants' reading order: the server's (repository/store.py,
// repository/variant_table.py), which tests/js/lib/files/test_manifest_vectors.mjs holds these to.
export const SCHEMA = "onnxport.manifest";
export const SCHEMA_VERSION = 3;
export const VARIANT_ORDER = Object.freeze(["fp32", "fp16", "int8-dynamic", "int8-static", "int8-weights", "int4"]);

/**
 * @param {any} body the parsed JSON
 * @param {string} url where it came from (for the error)
 * @returns {Manifest}
 */
export function checkManifest(body, url) {
  if (body?.schema !== SCHEMA || body?.schema_version !== SCHEMA_VERSION) {
    throw new Error(
      `${url}: manifest schema ${body?.schema} v${body?.schema_version}; this library reads ${SCHEMA} v${SCHEMA_VERSION}`,
    );
  }
  return body;
}

/**
 * A model's variants in reading order (VARIANT_ORDER, then the rest).
 * @param {ModelEntry} model
 * @returns {Array<[string, VariantRecord]>}
 */
export function variants(model) {
  return Object.entries(model.variants).sort(([a], [b]) => readingOrder(a) - readingOrder(b));
}

/**
 * The names of a model's served variants (status "ok"), in reading order.
 * @param {ModelEntry} model
 * @returns {string[]}
 */
export function served(model) {
  return variants(model)
    .filter(([, record]) => record.status === "ok")
    .map(([name]) => name);
}

// Unknown variant names sort after the known ones, as in the server's listing.
function readingOrder(name) {
  const index = VARIANT_ORDER.indexOf(name);
  return index < 0 ? VARIANT_ORDER.length : index;
}

export function tensorType(dtype) {
  const type = Object.hasOwn(TENSOR_TYPES, dtype) ? TENSOR_TYPES[dtype] : undefined;
  if (!type) throw new Error(`dtype ${dtype} has no browser tensor type`);
  return type;
}
