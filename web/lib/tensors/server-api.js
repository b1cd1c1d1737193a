// The server's Open Inference Protocol (V2) API: the fallback runtime and the reference.
import { ARRAYS, DATATYPES } from "./dtypes.js";

const TYPES = Object.fromEntries(Object.entries(DATATYPES).map(([type, datatype]) => [datatype, type]));

// The JSON text of a tensor's data. BOOL is JSON true/false (the V2 protocol's form; a strict
// server refuses 0/1), 64-bit integers are written digit by digit (a Number would round them
// above 2^53), floats through JSON.stringify (NaN and infinities become null).
function dataText(t) {
  if (t.type === "bool") return `[${Array.from(t.data, (v) => (v ? "true" : "false")).join(",")}]`;
  if (t.type === "int64" || t.type === "uint64")
    return `[${Array.from(t.data, (v) => BigInt(v).toString()).join(",")}]`;
  return JSON.stringify(Array.from(t.data));
}

// The body of an infer request for feeds ({name: {type, dims, data}}), as JSON text.
export function inferRequestBody(feeds) {
  const inputs = Object.entries(feeds).map(([name, t]) => {
    const datatype = DATATYPES[t.type];
    if (!datatype)
      throw new Error(
        `input ${name}: dtype ${t.type} cannot be sent to the server (JSON supports ${Object.keys(DATATYPES).join(", ")})`,
      );
    const head = JSON.stringify({ name, shape: t.dims, datatype });
    return `${head.slice(0, -1)},"data":${dataText(t)}}`;
  });
  return `{"inputs":[${inputs.join(",")}]}`;
}

// The response's outputs as plain tensors: BOOL as a Uint8Array of 0/1 (what onnxruntime-web
// returns for bool), 64-bit integers as BigInt arrays, null (NaN) back to NaN.
export function decodeInferResponse(body) {
  const outputs = {};
  for (const output of body.outputs) {
    const type = TYPES[output.datatype];
    if (!type) throw new Error(`output ${output.name}: datatype ${output.datatype} is not supported in the browser`);
    const Array_ = ARRAYS[type];
    let data;
    if (type === "bool") data = Array_.from(output.data, (v) => (v ? 1 : 0));
    else if (type.endsWith("int64")) data = Array_.from(output.data, (v) => BigInt(v));
    else data = Array_.from(output.data, (v) => (v === null ? NaN : v));
    outputs[output.name] = { type, dims: output.shape, data };
  }
  return outputs;
}

/**
 * One V2 inference request's JSON answer and its round trip; an error answer is thrown with the server's words.
 * @param {string} base the server's URL (ends with "/") @param {string} model @param {string} variant
 * @param {string} requestBody the request's JSON text
 * @returns {Promise<{body: any, runMs: number}>}
 */
async function postInfer(base, model, variant, requestBody) {
  const url = new URL(`v2/models/${encodeURIComponent(model)}/versions/${encodeURIComponent(variant)}/infer`, base);
  const started = performance.now();
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: requestBody,
  });
  const body = await response.json();
  const runMs = performance.now() - started;
  if (!response.ok) throw new Error(`server ${model}/${variant}: HTTP ${response.status}: ${body.error}`);
  return { body, runMs };
}

// base: the server's URL (ends with "/").
export async function serverInfer(base, model, variant, feeds) {
  const { body, runMs } = await postInfer(base, model, variant, inferRequestBody(feeds));
  return { outputs: decodeInferResponse(body), runMs };
}

// Raw input to a model's pipeline on the server (docs/reference/server.md, "Raw input"): the input its pipeline made of it
// (pipeline.js `raw`: texts or pairs as BYTES `text`, images as BYTES `image` in base64); the server tokenizes or
// decodes with the Python side of the same spec and answers with the model's outputs and `answer` (one JSON text
// per row).
/**
 * @param {string} base @param {string} model @param {string} variant
 * @param {{name: string, datatype: "BYTES", shape: number[], data: string[]}} input
 * @returns {Promise<{answers: any[], outputs: import("./tensors.js").Tensors, runMs: number}>}
 */
export async function serverPipeline(base, model, variant, input) {
  const { body, runMs } = await postInfer(base, model, variant, JSON.stringify({ inputs: [input] }));
  const answer = body.outputs.find((/** @type {{name: string}} */ o) => o.name === "answer");
  const outputs = decodeInferResponse({
    outputs: body.outputs.filter((/** @type {{name: string}} */ o) => o.name !== "answer"),
  });
  return { answers: answer.data.map((/** @type {string} */ text) => JSON.parse(text)), outputs, runMs };
}
