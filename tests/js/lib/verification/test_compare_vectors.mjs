// The comparison rule's shared vectors (tests/vectors/compare_vectors.json), through the browser's
// compareOutput and the fp32 judgement (judgement.js, floor basis), whose reason (data) must be Python's;
// tests/accuracy/test_compare_vectors.py runs the same file through Python.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { compareOutput } from "../../../../web/lib/verification/compare.js";
import { judge } from "../../../../web/lib/verification/judgement.js";
import { ARRAYS, tensor } from "../../../../web/lib/tensors/tensors.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/compare_vectors.json", import.meta.url)));
const NONFINITE = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };

// JSON values -> the typed array onnxruntime-web would hand back for that dtype.
function decode(dtype, dims, values) {
  const Array_ = ARRAYS[dtype];
  if (!Array_) throw new Error(`vector dtype ${dtype} has no browser typed array`);
  let data;
  if (dtype.startsWith("float")) data = values.map((v) => (typeof v === "string" ? NONFINITE[v] : v));
  else if (Array_ === BigInt64Array || Array_ === BigUint64Array) data = values.map((v) => BigInt(v));
  else data = values.map(Number);
  assert.ok(
    data.every((v) => v !== undefined),
    `${dtype} ${JSON.stringify(values)}: unknown value`,
  );
  return tensor(dtype, dims, Array_.from(data));
}

// Python's reason as data: the same code, names and integers; floats within a relative 1e-9.
function sameReason(actual, expected, what) {
  if (expected === null || typeof expected !== "object") {
    if (typeof expected === "number" && typeof actual === "number")
      assert.ok(
        Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)),
        `${what}: ${actual} != ${expected}`,
      );
    else assert.equal(actual, expected, what);
    return;
  }
  assert.deepEqual(Object.keys(actual ?? {}).sort(), Object.keys(expected).sort(), what);
  for (const key of Object.keys(expected)) sameReason(actual[key], expected[key], `${what}: ${key}`);
}

test("the vector file has enough distinct cases, of each outcome", () => {
  assert.ok(VECTORS.length >= 20, `${VECTORS.length} cases`);
  assert.equal(new Set(VECTORS.map((c) => c.name)).size, VECTORS.length, "case names are unique");
  assert.ok(VECTORS.some((c) => c.pass) && VECTORS.some((c) => !c.pass));
  for (const c of VECTORS) {
    assert.equal(typeof c.pass, "boolean", c.name);
    if (c.pass) assert.equal(c.first_mismatch, null, c.name);
  }
});

for (const c of VECTORS) {
  test(`vector: ${c.name}`, () => {
    const expected = decode(c.dtype, c.dims, c.expected);
    const got = decode(c.dtype, c.got_dims ?? c.dims, c.got);
    const tol = { abs: c.abs, rel: c.rel, top1_min: 0, cosine_min: -1 };
    const report = compareOutput(got, expected, tol);
    const passed = !report.first_mismatch && !report.shape_mismatch && report.nonfinite === 0;
    assert.equal(passed, c.pass, `${c.name}: ${JSON.stringify(report)}`);
    assert.deepEqual(report.first_mismatch?.index ?? null, c.first_mismatch, c.name);
    assert.equal(Boolean(report.shape_mismatch), Boolean(c.got_dims), c.name);
    if (!report.shape_mismatch) assert.equal(report.nonfinite, c.nonfinite ?? 0, c.name);
    // The judgement of an fp32 file (the floor basis) agrees with the figures.
    const judged = judge({
      task: "regression",
      arithmetic: "fp32",
      floor: tol,
      got: { out: got },
      sameVariant: { out: expected },
    });
    assert.equal(judged.ok, c.pass, `${c.name}: ${JSON.stringify(judged.reason)}`);
    assert.equal(judged.basis, "floor");
    sameReason(judged.reason, c.reason, c.name);
  });
}
