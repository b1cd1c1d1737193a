// web/lib/verification/compare.js: the element rule, the per-output report, the task metrics and the budget check
// (judgement.js, built on them, is pinned by tests/vectors/judgement_vectors.json: test_judgement_vectors.mjs).
// The rule's boundary cases live in tests/vectors/compare_vectors.json (test_compare_vectors.mjs).
import assert from "node:assert/strict";
import { test } from "node:test";

import { budgetCheck, compareOutput, passes, taskMetric } from "../../../../web/lib/verification/compare.js";
import { tensor } from "../../../../web/lib/tensors/tensors.js";

const f32 = (dims, values) => tensor("float32", dims, Float32Array.from(values));
const f64 = (dims, values) => tensor("float64", dims, Float64Array.from(values));
const TOL = { abs: 1e-4, rel: 1e-6, top1_min: 1, cosine_min: 0.9999 };

test("passes: abs bound, inclusive", () => {
  assert.equal(passes(1, 1.25, { abs: 0.25, rel: 0 }), true);
  assert.equal(passes(1, 1.25 + 2 ** -50, { abs: 0.25, rel: 0 }), false);
});

test("passes: rel is a relative error, symmetric, same sign only", () => {
  assert.equal(passes(100, 100.00005, { abs: 0, rel: 1e-6 }), true);
  assert.equal(passes(100, 100.0002, { abs: 0, rel: 1e-6 }), false);
  assert.equal(passes(4, 5, { abs: 0, rel: 0.25 }), true);
  assert.equal(passes(5, 4, { abs: 0, rel: 0.25 }), true);
  assert.equal(passes(-4, -5, { abs: 0, rel: 0.25 }), true);
  assert.equal(passes(4, -4, { abs: 0, rel: 100 }), false);
  // The old ratio form: rel 1.000001 now means "within 100%".
  assert.equal(passes(1, 1.9, { abs: 0, rel: 1.000001 }), true);
});

test("passes: zero has no ratio; only abs can accept a difference from zero", () => {
  assert.equal(passes(0, 1e-9, { abs: 0, rel: 1e9 }), false);
  assert.equal(passes(1e-9, 0, { abs: 0, rel: 1e9 }), false);
  assert.equal(passes(0, 1e-9, { abs: 1e-9, rel: 0 }), true);
  assert.equal(passes(0, -0, { abs: 0, rel: 0 }), true);
});

test("passes: NaN and infinities", () => {
  const tol = { abs: Infinity, rel: Infinity };
  assert.equal(passes(NaN, NaN, { abs: 0, rel: 0 }), true);
  assert.equal(passes(Infinity, Infinity, { abs: 0, rel: 0 }), true);
  assert.equal(passes(-Infinity, -Infinity, { abs: 0, rel: 0 }), true);
  assert.equal(passes(Infinity, -Infinity, tol), false);
  assert.equal(passes(1, Infinity, tol), false);
  assert.equal(passes(Infinity, 1, tol), false);
  assert.equal(passes(1, NaN, tol), false);
  assert.equal(passes(NaN, 1, tol), false);
});

test("passes: a null bound is not applied", () => {
  assert.equal(passes(1000, 1000.5, { abs: null, rel: 1e-3 }), true);
  assert.equal(passes(2, 2.5, { abs: 1, rel: null }), true);
  assert.equal(passes(2, 3.5, { abs: 1, rel: null }), false);
});

test("compareOutput: figures of a passing output", () => {
  const report = compareOutput(f64([2, 2], [1, 2.00005, 3, 4]), f64([2, 2], [1, 2, 3, 4]), TOL);
  assert.equal(report.elements, 4);
  assert.equal(report.nonfinite, 0);
  assert.ok(Math.abs(report.max_abs - 5e-5) < 1e-12, String(report.max_abs));
  assert.ok(Math.abs(report.max_rel - 2.5e-5) < 1e-12, String(report.max_rel));
  assert.equal(report.first_mismatch, undefined);
  assert.equal(report.shape_mismatch, undefined);
});

test("compareOutput: the first mismatch names its multi-index, expected and got", () => {
  const expected = f32([2, 2, 3], new Array(12).fill(0));
  const got = f32([2, 2, 3], [0, 0, 0, 0, 0, 0, 0, 0.5, 0, 0, 0, 9]);
  const report = compareOutput(got, expected, TOL);
  assert.deepEqual(report.first_mismatch, { index: [1, 0, 1], expected: 0, got: 0.5 });
  assert.equal(report.max_abs, 9);
});

test("compareOutput: non-finite values are counted and named as text", () => {
  const report = compareOutput(f32([4], [1, Infinity, NaN, 4]), f32([4], [1, 2, 3, -Infinity]), TOL);
  assert.equal(report.nonfinite, 2); // the -Infinity expected at [3] is not a new non-finite value
  assert.deepEqual(report.first_mismatch, { index: [1], expected: 2, got: "Infinity" });
  assert.equal(report.max_abs, 0); // no finite difference anywhere
});

test("compareOutput: NaN where NaN is expected is no error and no difference", () => {
  const report = compareOutput(f32([2], [NaN, 1]), f32([2], [NaN, 1]), { abs: 0, rel: 0 });
  assert.equal(report.first_mismatch, undefined);
  assert.equal(report.max_abs, 0);
});

test("compareOutput: a shape mismatch is reported before any element", () => {
  const report = compareOutput(f32([3, 2], [1, 2, 3, 4, 5, 6]), f32([2, 3], [1, 2, 3, 4, 5, 6]), TOL);
  assert.deepEqual(report.shape_mismatch, { expected: [2, 3], got: [3, 2] });
  assert.equal(report.first_mismatch, undefined);
  assert.ok(compareOutput(f32([1], [1]), f32([], [1]), TOL).shape_mismatch, "[1] is not a scalar");
});

test("compareOutput: integer outputs are exact, bigints beyond 2^53 included", () => {
  const i64 = (values) => tensor("int64", [values.length], BigInt64Array.from(values));
  assert.equal(compareOutput(i64([1n, 2n]), i64([1n, 2n]), TOL).first_mismatch, undefined);
  assert.deepEqual(compareOutput(i64([1n, 3n]), i64([1n, 2n]), { abs: 10, rel: 10 }).first_mismatch.index, [1]);
  const big = 2n ** 53n;
  assert.ok(compareOutput(i64([big]), i64([big + 1n]), { abs: 10, rel: 10 }).first_mismatch);
  const i32 = (values) => tensor("int32", [values.length], Int32Array.from(values));
  assert.deepEqual(compareOutput(i32([5, 6, 7]), i32([5, 6, 8]), { abs: 5, rel: 5 }).first_mismatch, {
    index: [2],
    expected: 8,
    got: 7,
  });
});

test("compareOutput: bool outputs are exact", () => {
  const b = (values) => tensor("bool", [values.length], Uint8Array.from(values));
  assert.equal(compareOutput(b([1, 0]), b([1, 0]), TOL).first_mismatch, undefined);
  assert.deepEqual(compareOutput(b([1, 1]), b([1, 0]), { abs: 1, rel: 1 }).first_mismatch.index, [1]);
});

test("compareOutput: with no abs and no rel, floats are not judged element by element; new infs still count", () => {
  const report = compareOutput(f32([2], [5, Infinity]), f32([2], [1, 2]), { abs: null, rel: null });
  assert.equal(report.first_mismatch, undefined);
  assert.equal(report.nonfinite, 1);
});

test("compareOutput: scalars and empty tensors", () => {
  assert.deepEqual(compareOutput(f32([], [2]), f32([], [1]), TOL).first_mismatch.index, []);
  const empty = compareOutput(f32([0, 4], []), f32([0, 4], []), TOL);
  assert.equal(empty.elements, 0);
  assert.equal(empty.first_mismatch, undefined);
});

test("taskMetric: classification agreement is per row of the last axis", () => {
  const expected = f32([3, 3], [0, 1, 0, 1, 0, 0, 0, 0, 1]);
  const got = f32([3, 3], [0, 2, 0, 0, 3, 0, 0, 0, 5]);
  assert.deepEqual(taskMetric("classification", got, expected), { top1_agreement: 2 / 3 });
  // A 1-D output is one row of classes, not one class per element.
  assert.deepEqual(taskMetric("classification", f32([3], [0, 0, 1]), f32([3], [1, 0, 0])), { top1_agreement: 0 });
  // [batch, tokens, classes]: one top class per token, as numpy's argmax(-1).
  const tokens = f32([1, 2, 2], [1, 0, 0, 1]);
  assert.deepEqual(taskMetric("classification", f32([1, 2, 2], [1, 0, 1, 0]), tokens), { top1_agreement: 0.5 });
});

test("taskMetric: embedding is the worst row's cosine", () => {
  const expected = f32([2, 2], [1, 0, 0, 1]);
  const metric = taskMetric("embedding", f32([2, 2], [2, 0, 1, 1]), expected);
  assert.ok(Math.abs(metric.cosine_min - Math.SQRT1_2) < 1e-6, String(metric.cosine_min));
});

test("taskMetric: sequences, detection maps and other tasks, as Python's compare.task_metric", () => {
  // [1, 4 steps, 2 classes]: the top class of 3 of 4 steps is kept.
  const steps = f32([1, 4, 2], [1, 0, 0, 1, 1, 0, 0, 1]);
  assert.deepEqual(taskMetric("sequence", f32([1, 4, 2], [1, 0, 0, 1, 0, 1, 0, 1]), steps), { step_agreement: 0.75 });
  assert.deepEqual(taskMetric("sequence", f32([0, 2], []), f32([0, 2], [])), { step_agreement: 1 });
  // Errors scaled by the reference's largest finite magnitude (4 here).
  const map = f32([4], [1, -4, 0, 2]);
  assert.deepEqual(taskMetric("detection-map", f32([4], [1, -4, 0.5, 2]), map), {
    scaled_mean_abs: 0.125 / 4,
    scaled_max_abs: 0.5 / 4,
  });
  assert.deepEqual(taskMetric("regression", f32([4], [1, -4, 0.5, 2]), map), { scaled_max_abs: 0.5 / 4 });
  assert.deepEqual(taskMetric("regression", f32([4], [1, -4, NaN, 2]), map), { scaled_max_abs: Infinity });
  // numpy's argmax: a NaN counts as the top class.
  assert.deepEqual(taskMetric("classification", f32([1, 2], [0, NaN]), f32([1, 2], [0, 1])), { top1_agreement: 1 });
});

test("taskMetric: no metric for a missing output or a shape mismatch", () => {
  const t = f32([1, 2], [1, 2]);
  assert.deepEqual(taskMetric("classification", undefined, t), {});
  assert.deepEqual(taskMetric("classification", f32([2, 1], [1, 2]), t), {});
});

test("compareOutput: mean error, the reference's scale and integer mismatches, as Python's output_errors", () => {
  const report = compareOutput(f32([4], [1, 2.5, NaN, 7]), f32([4], [1, 2, NaN, -8]), TOL);
  assert.equal(report.scale, 8);
  assert.equal(report.mean_abs, (0 + 0.5 + 15) / 3); // NaN against NaN is not counted
  const i32 = (values) => tensor("int32", [values.length], Int32Array.from(values));
  assert.equal(compareOutput(i32([1, 5, 3]), i32([1, 2, 4]), null).mismatches, 2);
  assert.equal(report.mismatches, undefined);
});

test("budgetCheck: Python's budgets.shortfall, the reason as data with both figures", () => {
  const budget = { top1_min: 0.97, cosine_min: 0.98, scaled_max_abs: 0.1, scaled_mean_abs: 1e-2 };
  const reason = (code, value, bound, against = "fp32", limit = "budget") => ({ code, value, bound, against, limit });
  assert.equal(budgetCheck(budget, "classification", { top1_agreement: 0.97 }), null);
  assert.deepEqual(
    budgetCheck(budget, "classification", { top1_agreement: 0.5 }),
    reason("top1_below_bound", 0.5, 0.97),
  );
  assert.deepEqual(
    budgetCheck({ ...budget, cosine_min: 1e-5 }, "embedding", { cosine_min: NaN }),
    reason("cosine_below_bound", "NaN", 1e-5),
  );
  assert.deepEqual(
    budgetCheck(budget, "sequence", { step_agreement: 0.9 }, { against: "server_run", limit: "floor" }),
    reason("step_agreement_below_bound", 0.9, 0.97, "server_run", "floor"),
  );
  assert.deepEqual(
    budgetCheck(budget, "detection-map", { scaled_mean_abs: 0.0123456, scaled_max_abs: 9 }),
    reason("mean_error_above_bound", 0.0123456, 0.01),
  );
  assert.deepEqual(
    budgetCheck(budget, "other", { scaled_max_abs: 1.5e-7 + 1 }),
    reason("max_error_above_bound", 1.5e-7 + 1, 0.1),
  );
  assert.equal(budgetCheck({ ...budget, top1_min: null }, "classification", { top1_agreement: 0 }), null);
  // Without its own metric a task falls to the scaled error, as Python's elif chain does.
  assert.deepEqual(
    budgetCheck(budget, "classification", { scaled_max_abs: 0.5 }),
    reason("max_error_above_bound", 0.5, 0.1),
  );
});
