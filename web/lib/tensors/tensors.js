// Plain tensors ({type, dims, data}) shared by the page, the worker and the server client.

import { ARRAYS } from "./dtypes.js";

/** An element type, as onnxruntime-web names it (dtypes.js). @typedef {import("./dtypes.js").TensorType} TensorType */
/** A tensor's values, flat, in row-major order (dtypes.js). @typedef {import("./dtypes.js").TensorData} TensorData */
/**
 * A plain tensor: what run() takes and returns, in the browser and from the server alike.
 * @typedef {object} Tensor
 * @property {TensorType} type
 * @property {number[]} dims
 * @property {TensorData} data
 */
/** Tensors by input or output name. @typedef {Record<string, Tensor>} Tensors */

export { ARRAYS };
/**
 * A tensor for run(): tensor("float32", [1, 4], Float32Array.from([6.9, 3.1, 5.4, 2.1])).
 * @param {TensorType} type
 * @param {number[]} dims
 * @param {TensorData} data
 * @returns {Tensor}
 */
export function tensor(type, dims, data) {
  return { type, dims, data };
}

// The first n rows (along the batch axis) of every tensor.
export function leadingRows(feeds, n) {
  const sliced = {};
  for (const [name, t] of Object.entries(feeds)) {
    if (!t.dims.length) {
      sliced[name] = t; // a scalar (a sample rate) has no rows
      continue;
    }
    const rows = Math.min(n, t.dims[0]);
    const width = t.dims.slice(1).reduce((a, b) => a * b, 1);
    sliced[name] = tensor(t.type, [rows, ...t.dims.slice(1)], t.data.slice(0, rows * width));
  }
  return sliced;
}

export function argmax(values) {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

export function row(t, index) {
  const width = t.dims.slice(1).reduce((a, b) => a * b, 1);
  return t.data.slice(index * width, (index + 1) * width);
}

export function cosine(a, b) {
  let dot = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.max(Math.sqrt(na) * Math.sqrt(nb), 1e-12);
}

export function maxAbsDiff(a, b) {
  if (a.data.length !== b.data.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.data.length; i++) {
    const x = Number(a.data[i]),
      y = Number(b.data[i]);
    if (Number.isNaN(x) && Number.isNaN(y)) continue;
    worst = Math.max(worst, Math.abs(x - y));
  }
  return worst;
}

export function softmax(values) {
  const top = Math.max(...values);
  const exps = Array.from(values, (v) => Math.exp(v - top));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / sum);
}

// Tensors as {name: {dtype, shape, data: base64 little-endian}}: the golden data endpoint's
// shape, and how `onnxport check` and `onnxport bench` pass tensors to and from the page.
export function decodeTensors(encoded) {
  const feeds = {};
  for (const [name, t] of Object.entries(encoded)) {
    const raw = Uint8Array.from(atob(t.data), (c) => c.charCodeAt(0));
    const type = t.dtype === "bool" ? "bool" : t.dtype;
    const Array_ = ARRAYS[type];
    if (!Array_) throw new Error(`golden input ${name}: dtype ${t.dtype} is not supported in the browser`);
    feeds[name] = tensor(type, t.shape, new Array_(raw.buffer, 0, raw.byteLength / Array_.BYTES_PER_ELEMENT));
  }
  return feeds;
}

export function encodeTensors(tensors) {
  const encoded = {};
  for (const [name, t] of Object.entries(tensors)) {
    const raw = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    let text = "";
    for (let i = 0; i < raw.length; i += 0x8000) text += String.fromCharCode(...raw.subarray(i, i + 0x8000));
    encoded[name] = { dtype: t.type, shape: t.dims, data: btoa(text) };
  }
  return encoded;
}
