// The manifest the build wrote (docs/manifest.md): checked once, then asked.
const SCHEMA = "onnxport.manifest";
const SCHEMA_VERSION = 1;
export const VARIANT_ORDER = Object.freeze(["fp32", "fp16", "int8-dynamic", "int8-static"]);

export function checkManifest(body, url) {
  if (body?.schema !== SCHEMA || body?.schema_version !== SCHEMA_VERSION) {
    throw new Error(`${url}: manifest schema ${body?.schema} v${body?.schema_version}; this library reads ${SCHEMA} v${SCHEMA_VERSION}`);
  }
  return body;
}

export function variants(model) {
  return Object.entries(model.variants).sort(
    ([a], [b]) => VARIANT_ORDER.indexOf(a) - VARIANT_ORDER.indexOf(b),
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

export function tensorType(dtype) {
  const type = TENSOR_TYPES[dtype];
  if (!type) throw new Error(`dtype ${dtype} has no browser tensor type`);
  return type;
}
