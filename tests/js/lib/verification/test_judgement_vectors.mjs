// The judgement's shared vectors (tests/vectors/judgement_vectors.json) through web/lib/verification/judgement.js;
// tests/accuracy/test_judgement_vectors.py runs the same file through Python's accuracy/judgement.py,
// which wrote each vector's reason, metric and diagnostic: both languages must give the same data (a reason's
// code, names and numbers); each renders its own words (reasons.js here, test_reasons.mjs).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { judge } from "../../../../web/lib/verification/judgement.js";
import { renderReason } from "../../../../web/lib/verification/reasons.js";
import { ARRAYS, tensor } from "../../../../web/lib/tensors/tensors.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/judgement_vectors.json", import.meta.url)));
const NONFINITE = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };

// {name: {dtype, dims, data}} -> the tensors onnxruntime-web would hand back.
function decode(outputs) {
  if (!outputs) return null;
  const decoded = {};
  for (const [name, { dtype, dims, data }] of Object.entries(outputs)) {
    const Array_ = ARRAYS[dtype];
    assert.ok(Array_, `vector dtype ${dtype} has no browser typed array`);
    const values = data.map((v) => (typeof v === "string" ? NONFINITE[v] : v));
    decoded[name] = tensor(
      dtype,
      dims,
      Array_ === BigInt64Array ? BigInt64Array.from(values.map(BigInt)) : Array_.from(values),
    );
  }
  return decoded;
}

// Data alike: the same keys, text and integers equal, floats within a relative 1e-9.
function sameData(actual, expected, what) {
  if (typeof expected === "number" && typeof actual === "number" && !Number.isInteger(expected)) {
    assert.ok(
      Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)),
      `${what}: ${actual} != ${expected}`,
    );
  } else if (expected !== null && typeof expected === "object") {
    assert.ok(actual !== null && typeof actual === "object", `${what}: ${JSON.stringify(actual)}`);
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), what);
    for (const key of Object.keys(expected)) sameData(actual[key], expected[key], `${what}.${key}`);
  } else {
    assert.equal(actual, expected, what);
  }
}

function close(actual, expected, what) {
  assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), what);
  for (const [key, value] of Object.entries(expected)) {
    assert.ok(
      Math.abs(actual[key] - value) <= 1e-9 * Math.max(1, Math.abs(value)),
      `${what}: ${key} ${actual[key]} != ${value}`,
    );
  }
}

test("the vector file has cases of every outcome on both bases", () => {
  assert.ok(VECTORS.length >= 20, `${VECTORS.length} cases`);
  assert.equal(new Set(VECTORS.map((v) => v.name)).size, VECTORS.length, "case names are unique");
  const kinds = new Set(VECTORS.map((v) => `${v.ok}/${v.basis}`));
  assert.deepEqual([...kinds].sort(), ["false/budget", "false/floor", "true/budget", "true/floor"]);
});

for (const v of VECTORS) {
  test(`vector: ${v.name}`, () => {
    const result = judge({
      task: v.task,
      metricOutput: v.metric_output,
      arithmetic: v.arithmetic,
      budget: v.budget,
      floor: v.floor,
      got: decode(v.got),
      fp32: decode(v.fp32),
      sameVariant: decode(v.same_variant),
    });
    assert.equal(result.ok, v.ok, `${v.name}: ${JSON.stringify(result.reason)}`);
    assert.equal(result.basis, v.basis);
    sameData(result.reason, v.reason, "the same reason as Python");
    if (result.reason) assert.ok(renderReason(result.reason), "and words for it");
    close(result.metric, v.metric, "metric");
    if (v.diagnostic_max_abs === null) assert.equal(result.diagnostic, null);
    else {
      close({ max_abs: result.diagnostic.max_abs }, { max_abs: v.diagnostic_max_abs }, "diagnostic");
      sameData(result.diagnostic, v.diagnostic, "the same diagnostic as Python");
    }
  });
}

test("the diagnostic names where and what element-wise closeness would have needed", () => {
  const f32 = (values) => ({ y: tensor("float32", [1, 3], Float32Array.from(values)) });
  const result = judge({
    task: "classification",
    metricOutput: "y",
    arithmetic: "int8",
    budget: { top1_min: 0.97 },
    floor: { abs: 1e-4, rel: 1e-6 },
    got: f32([2.25, 1.25, 0.25]),
    fp32: f32([2, 1, 0]),
    sameVariant: f32([1.75, 0.75, -0.25]),
  });
  assert.equal(result.ok, true);
  assert.deepEqual(result.diagnostic.first_outside_floor, { output: "y", index: [0, 0], expected: 1.75, got: 2.25 });
  assert.equal(
    renderReason(result.diagnostic),
    "element-wise vs the server's output of this file: max abs 0.5 in 'y', first outside " +
      "the floor at y[0, 0]; the element rule would have needed abs 0.5",
  );
  assert.equal(result.outputs.y.first_mismatch.index.join(","), "0,0");
});

test("a diagnostic of equal outputs says they match and names no bound of 0", () => {
  const f32 = (values) => ({ y: tensor("float32", [1, 3], Float32Array.from(values)) });
  const result = judge({
    task: "classification",
    metricOutput: "y",
    arithmetic: "int8",
    budget: { top1_min: 0.97 },
    floor: { abs: 1e-4, rel: 1e-6 },
    got: f32([2, 1, 0]),
    fp32: f32([2.25, 1.25, 0.25]),
    sameVariant: f32([2, 1, 0]),
  });
  assert.equal(result.diagnostic.max_abs, 0);
  assert.equal(
    renderReason(result.diagnostic),
    "element-wise vs the server's output of this file: max abs 0 in 'y': the outputs match exactly",
  );
});

test("judge asks for what its basis needs", () => {
  const y = { y: tensor("float32", [1, 2], Float32Array.from([0, 0])) };
  assert.throws(
    () => judge({ task: "classification", arithmetic: "int4", got: y }),
    /arithmetic must be one of fp32, fp16, int8, got "int4"/,
  );
  assert.throws(() => judge({ task: "classification", arithmetic: "fp32", got: y, fp32: y }), /sameVariant is needed/);
  assert.throws(
    () => judge({ task: "classification", arithmetic: "fp16", budget: {}, got: y, sameVariant: y }),
    /fp32 is needed/,
  );
  assert.throws(() => judge({ task: "classification", arithmetic: "int8", got: y, fp32: y }), /budget is needed/);
});
