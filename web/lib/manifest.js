// The manifest the build wrote (docs/manifest.md): checked once, then asked.
const SCHEMA = "onnxport.manifest";
const SCHEMA_VERSION = 2;
export const VARIANT_ORDER = Object.freeze(["fp32", "fp16", "int8-dynamic", "int8-static"]);

export function checkManifest(body, url) {
  if (body?.schema !== SCHEMA || body?.schema_version !== SCHEMA_VERSION) {
    throw new Error(`${url}: manifest schema ${body?.schema} v${body?.schema_version}; this library reads ${SCHEMA} v${SCHEMA_VERSION}`);
  }
  return body;
}

export function variants(model) {
  return Object.entries(model.variants).sort(
    ([a], [b]) => readingOrder(a) - readingOrder(b),
  );
}

export function served(model) {
  return variants(model).filter(([, record]) => record.status === "ok").map(([name]) => name);
}

// numpy dtype names of the manifest -> onnxruntime-web tensor types.
const TENSOR_TYPES = Object.freeze({
  float32: "float32", float64: "float64", float16: "float16", int8: "int8", uint8: "uint8",
  int16: "int16", uint16: "uint16", int32: "int32", uint32: "uint32", int64: "int64",
  uint64: "uint64", bool: "bool",
});

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
