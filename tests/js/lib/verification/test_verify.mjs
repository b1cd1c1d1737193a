// web/lib/verification/verify.js: which judgement first-use verification applies, on the reference files' tensors.
import assert from "node:assert/strict";
import { test } from "node:test";

import { renderReason } from "../../../../web/lib/verification/reasons.js";
import { judgeVerification, sameTensors, wrongResultsMessage } from "../../../../web/lib/verification/verify.js";
import { tensor } from "../../../../web/lib/tensors/tensors.js";

const f32 = (dims, values) => tensor("float32", dims, Float32Array.from(values));
const MODEL = { task: "classification", metric_output: "logits" };
const INPUTS = { x: f32([2, 2], [1, 2, 3, 4]) };
const FP32 = { inputs: INPUTS, outputs: { logits: f32([2, 3], [3, 1, 0, 0, 2, 1]) } };
// The int8 file's own reference (native onnxruntime's int8 kernels) and a browser run 0.5 away from it.
const INT8 = { inputs: INPUTS, outputs: { logits: f32([2, 3], [2.6, 1.2, 0.1, 0.1, 1.8, 1.1]) } };
const BROWSER = { logits: f32([2, 3], [3.1, 0.8, 0.2, 0.3, 2.2, 0.9]) };
const RULE = {
  arithmetic: "int8",
  budget: { top1_min: 0.97, cosine_min: 0.98 },
  floor: { abs: 1e-4, rel: 1e-6, top1_min: 1, cosine_min: 0.99999 },
  tolerance: { abs: 0.05, rel: 0.05, top1_min: 0.98 },
};

test("an int8 file 0.5 away from its own reference but with fp32's top classes passes by its budget", () => {
  const judged = judgeVerification(BROWSER, { model: MODEL, reference: INT8, fp32Reference: FP32, rule: RULE });
  assert.equal(judged.ok, true, JSON.stringify(judged.reason));
  assert.equal(judged.rule, "budget");
  assert.deepEqual(judged.metric, { top1_agreement: 1 });
  assert.ok(Math.abs(judged.diagnostic.max_abs - 0.5) < 1e-6, JSON.stringify(judged.diagnostic));
  assert.match(
    renderReason(judged.diagnostic),
    /^element-wise vs the server's output of this file: max abs 0\.5 in 'logits'/,
  );
});

test("reference inputs that differ from fp32's fall back to the table's element-wise row", () => {
  const other = { inputs: { x: f32([2, 2], [1, 2, 3, 5]) }, outputs: INT8.outputs };
  const judged = judgeVerification(BROWSER, { model: MODEL, reference: other, fp32Reference: FP32, rule: RULE });
  assert.equal(judged.rule, "table");
  assert.equal(judged.ok, false);
  assert.match(
    renderReason(judged.reason),
    /^output 'logits' at \[0, 0\]: expected 2\.5999999046325684, got 3\.0999999046325684 .*floor abs 0\.05, rel 0\.05\)$/,
  );
  // No fp32 reference at all: the same fallback.
  assert.equal(
    judgeVerification(BROWSER, { model: MODEL, reference: INT8, fp32Reference: null, rule: RULE }).rule,
    "table",
  );
});

test("an fp32 file is judged element by element within the floor", () => {
  const near = { logits: f32([2, 3], [3.00005, 1, 0, 0, 2, 1]) };
  const ok = judgeVerification(near, {
    model: MODEL,
    reference: FP32,
    fp32Reference: null,
    rule: { ...RULE, arithmetic: "fp32" },
  });
  assert.equal(ok.ok, true, JSON.stringify(ok.reason));
  assert.equal(ok.rule, "floor");
  const off = judgeVerification(BROWSER, {
    model: MODEL,
    reference: FP32,
    fp32Reference: null,
    rule: { ...RULE, arithmetic: "fp32" },
  });
  assert.equal(off.ok, false);
  assert.match(renderReason(off.reason), /floor abs 0\.0001, rel 0\.000001\)$/);
});

test("a budget failure says it was judged against fp32", () => {
  const flipped = { logits: f32([2, 3], [0, 1, 3, 0, 2, 1]) };
  const judged = judgeVerification(flipped, { model: MODEL, reference: INT8, fp32Reference: FP32, rule: RULE });
  assert.equal(judged.ok, false);
  assert.equal(renderReason(judged.reason), "top-1 agreement with fp32 0.5000 < budget 0.97");
  assert.equal(
    wrongResultsMessage("wasm", { ...judged, reason: renderReason(judged.reason), max_abs: 3 }),
    "wasm gave wrong results for this model on this device (top-1 agreement with fp32 0.5000 < budget 0.97, against fp32's reference outputs)",
  );
});

test("sameTensors: names, types, shapes and values, NaN equal to NaN", () => {
  assert.equal(sameTensors(INPUTS, { x: f32([2, 2], [1, 2, 3, 4]) }), true);
  assert.equal(sameTensors({ x: f32([1], [NaN]) }, { x: f32([1], [NaN]) }), true);
  assert.equal(sameTensors(INPUTS, { x: f32([4], [1, 2, 3, 4]) }), false);
  assert.equal(sameTensors(INPUTS, { y: f32([2, 2], [1, 2, 3, 4]) }), false);
  assert.equal(sameTensors(INPUTS, { x: tensor("float64", [2, 2], Float64Array.from([1, 2, 3, 4])) }), false);
  assert.equal(sameTensors(INPUTS, { ...INPUTS, z: f32([1], [0]) }), false);
});

test("one rule for the check, verification and the playground: the variant record's arithmetic and budget, the runtime's floor", async () => {
  const { judgementRule, judgeRun } = await import("../../../../web/lib/verification/judgement.js");
  const floor = { abs: 1e-4, rel: 1e-6, top1_min: 1, cosine_min: 0.99999 };
  const row = { abs: 0.05, rel: 0.05, top1_min: 0.98, cosine_min: 0.99 };
  const tolerances = { "fp32/wasm-1t": floor, "int8-dynamic/wasm-1t": row };
  const model = {
    ...MODEL,
    variants: {
      "int8-dynamic": { precision: "int8", arithmetic: "int8", budget: RULE.budget },
      old: { precision: "int8" }, // built before arithmetic and budget
    },
  };
  assert.deepEqual(judgementRule(model, "int8-dynamic", "wasm-1t", tolerances), {
    arithmetic: "int8",
    budget: RULE.budget,
    floor,
    tolerance: row,
  });
  const old = judgementRule(model, "old", "wasm-1t", { ...tolerances, "old/wasm-1t": row });
  assert.deepEqual(
    [old.arithmetic, old.budget],
    ["int8", row],
    "before those fields: its precision, and the table's row",
  );
  const judged = judgeRun(model, judgementRule(model, "int8-dynamic", "wasm-1t", tolerances), {
    got: BROWSER,
    fp32: FP32.outputs,
    sameVariant: INT8.outputs,
  });
  assert.equal(judged.ok, true, judged.reason);
  assert.equal(judged.basis, "budget");
});
