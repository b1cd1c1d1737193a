// web/lib/tensors/tensors.js: plain tensors, rows, small maths and the base64 tensor codec (no browser
// globals at import; atob/btoa are Node globals).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ARRAYS,
  argmax,
  cosine,
  decodeTensors,
  encodeTensors,
  leadingRows,
  maxAbsDiff,
  row,
  softmax,
  tensor,
} from "../../../../web/lib/tensors/tensors.js";

test("tensor is {type, dims, data}", () => {
  const data = Float32Array.of(1, 2);
  assert.deepEqual(tensor("float32", [2], data), { type: "float32", dims: [2], data });
});

test("ARRAYS maps every browser dtype to its typed array, and is frozen", () => {
  assert.equal(ARRAYS.float32, Float32Array);
  assert.equal(ARRAYS.int64, BigInt64Array);
  assert.equal(ARRAYS.uint64, BigUint64Array);
  assert.equal(ARRAYS.bool, Uint8Array);
  assert.equal(ARRAYS.float16, undefined); // no Float16Array across browsers: not decoded
  assert.ok(Object.isFrozen(ARRAYS));
});

test("leadingRows keeps the first n rows of each tensor, and scalars whole", () => {
  const feeds = {
    x: tensor("float32", [3, 2], Float32Array.of(1, 2, 3, 4, 5, 6)),
    ids: tensor("int64", [3], BigInt64Array.of(7n, 8n, 9n)),
    rate: tensor("int64", [], BigInt64Array.of(16000n)),
  };
  const sliced = leadingRows(feeds, 2);
  assert.deepEqual(sliced.x.dims, [2, 2]);
  assert.deepEqual([...sliced.x.data], [1, 2, 3, 4]);
  assert.deepEqual([...sliced.ids.data], [7n, 8n]);
  assert.equal(sliced.rate, feeds.rate);
  assert.equal(sliced.x.type, "float32");
  assert.notEqual(sliced.x.data.buffer, feeds.x.data.buffer, "a copy, not a view");
});

test("leadingRows never asks for more rows than there are", () => {
  const t = tensor("float32", [2, 3], Float32Array.of(1, 2, 3, 4, 5, 6));
  const { t: sliced } = leadingRows({ t }, 10);
  assert.deepEqual(sliced.dims, [2, 3]);
  assert.equal(sliced.data.length, 6);
  assert.deepEqual(leadingRows({ t }, 0).t.dims, [0, 3]);
});

test("argmax: the first of equal maxima; 0 for a single or empty input", () => {
  assert.equal(argmax([1, 3, 2]), 1);
  assert.equal(argmax([5, 5, 1]), 0);
  assert.equal(argmax([-3, -1, -2]), 1);
  assert.equal(argmax(Float32Array.of(7)), 0);
  assert.equal(argmax([]), 0);
});

test("row: one row of a batch, flattened; a 1-D tensor has one element per row", () => {
  const t = tensor("float32", [2, 2, 2], Float32Array.of(1, 2, 3, 4, 5, 6, 7, 8));
  assert.deepEqual([...row(t, 1)], [5, 6, 7, 8]);
  assert.deepEqual([...row(tensor("float32", [3], Float32Array.of(1, 2, 3)), 2)], [3]);
});

test("cosine: parallel 1, orthogonal 0, opposite -1, zero vectors 0 not NaN", () => {
  assert.ok(Math.abs(cosine([1, 2], [2, 4]) - 1) < 1e-12);
  assert.equal(cosine([1, 0], [0, 3]), 0);
  assert.ok(Math.abs(cosine([1, 1], [-1, -1]) + 1) < 1e-12);
  assert.equal(cosine([0, 0], [0, 0]), 0);
});

test("maxAbsDiff: worst difference; NaN pairs skipped; different sizes are infinitely apart", () => {
  const a = tensor("float32", [3], Float32Array.of(1, NaN, 3));
  const b = tensor("float32", [3], Float32Array.of(1.5, NaN, 1));
  assert.equal(maxAbsDiff(a, b), 2);
  assert.equal(maxAbsDiff(a, tensor("float32", [2], Float32Array.of(1, 2))), Infinity);
  const i = tensor("int64", [2], BigInt64Array.of(1n, 5n));
  assert.equal(maxAbsDiff(i, tensor("int64", [2], BigInt64Array.of(1n, 2n))), 3);
});

test("maxAbsDiff: NaN against a number is reported as NaN (not hidden as 0)", () => {
  const a = tensor("float32", [2], Float32Array.of(1, NaN));
  assert.ok(Number.isNaN(maxAbsDiff(a, tensor("float32", [2], Float32Array.of(1, 2)))));
});

test("softmax: sums to one, stable for large logits, keeps the order", () => {
  const p = softmax([1000, 1001, 999]);
  assert.ok(Math.abs(p.reduce((x, y) => x + y, 0) - 1) < 1e-12);
  assert.ok(p.every(Number.isFinite));
  assert.equal(argmax(p), 1);
  assert.deepEqual(softmax(Float32Array.of(0, 0)), [0.5, 0.5]);
});

function b64(typed) {
  return Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength).toString("base64");
}

test("decodeTensors: base64 little-endian bytes into the dtype's typed array", () => {
  const feeds = decodeTensors({
    x: { dtype: "float32", shape: [2, 2], data: b64(Float32Array.of(1.5, -2, 0, 3)) },
    ids: { dtype: "int64", shape: [2], data: b64(BigInt64Array.of(2n ** 60n, -1n)) },
    mask: { dtype: "bool", shape: [3], data: b64(Uint8Array.of(1, 0, 1)) },
  });
  assert.equal(feeds.x.type, "float32");
  assert.deepEqual(feeds.x.dims, [2, 2]);
  assert.ok(feeds.x.data instanceof Float32Array);
  assert.deepEqual([...feeds.x.data], [1.5, -2, 0, 3]);
  assert.deepEqual([...feeds.ids.data], [2n ** 60n, -1n]);
  assert.equal(feeds.mask.type, "bool");
  assert.deepEqual([...feeds.mask.data], [1, 0, 1]);
});

test("decodeTensors: an empty tensor, and a dtype the browser cannot hold", () => {
  const { e } = decodeTensors({ e: { dtype: "float32", shape: [0, 3], data: "" } });
  assert.equal(e.data.length, 0);
  assert.throws(
    () => decodeTensors({ h: { dtype: "float16", shape: [1], data: "AAA=" } }),
    /golden input h: dtype float16 is not supported in the browser/,
  );
});

test("encodeTensors is decodeTensors' inverse, for views into larger buffers too", () => {
  const whole = Float64Array.of(9, 1.25, -3, 9);
  const view = whole.subarray(1, 3);
  const tensors = {
    v: tensor("float64", [2], view),
    i: tensor("int32", [1, 3], Int32Array.of(-1, 0, 2147483647)),
    u: tensor("uint8", [2], Uint8Array.of(0, 255)),
  };
  const encoded = encodeTensors(tensors);
  assert.deepEqual(encoded.v, { dtype: "float64", shape: [2], data: b64(Float64Array.of(1.25, -3)) });
  const back = decodeTensors(encoded);
  for (const [name, t] of Object.entries(tensors)) {
    assert.equal(back[name].type, t.type, name);
    assert.deepEqual(back[name].dims, t.dims, name);
    assert.deepEqual([...back[name].data], [...t.data], name);
  }
});

test("encodeTensors handles tensors larger than one 32 KiB chunk", () => {
  const big = Uint8Array.from({ length: 0x8000 * 2 + 5 }, (_, i) => i % 251);
  const encoded = encodeTensors({ b: tensor("uint8", [big.length], big) });
  assert.equal(encoded.b.data, b64(big));
});
