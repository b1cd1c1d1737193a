// The server's Open Inference Protocol (V2) API: the fallback runtime and the reference.
import { ARRAYS } from "./tensors.js";

const DATATYPES = Object.freeze({
  float32: "FP32", float64: "FP64", int8: "INT8", uint8: "UINT8", int16: "INT16", uint16: "UINT16",
  int32: "INT32", uint32: "UINT32", int64: "INT64", uint64: "UINT64", bool: "BOOL",
});
const TYPES = Object.fromEntries(Object.entries(DATATYPES).map(([type, datatype]) => [datatype, type]));

// base: the server's URL (ends with "/").
export async function serverInfer(base, model, variant, feeds) {
  const inputs = Object.entries(feeds).map(([name, t]) => ({
    name, shape: t.dims, datatype: DATATYPES[t.type],
    data: Array.from(t.data, (v) => (typeof v === "bigint" ? Number(v) : v)),
  }));
  const url = new URL(`v2/models/${encodeURIComponent(model)}/versions/${encodeURIComponent(variant)}/infer`, base);
  const started = performance.now();
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ inputs }),
  });
  const body = await response.json();
  const runMs = performance.now() - started;
  if (!response.ok) throw new Error(`server ${model}/${variant}: HTTP ${response.status}: ${body.error}`);
  const outputs = {};
  for (const output of body.outputs) {
    const type = TYPES[output.datatype];
    const Array_ = ARRAYS[type];
    const values = output.data.map((v) => (v === null ? NaN : v));
    outputs[output.name] = {
      type, dims: output.shape,
      data: type.endsWith("int64") ? Array_.from(values, (v) => BigInt(v)) : Array_.from(values),
    };
  }
  return { outputs, runMs };
}
