// web/lib/choice/kernels.js: the measured table of operators each onnxruntime-web bundle lacks
// (scripts/measure_kernels.py) and the rule the plan applies to a variant's operator_types.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MISSING, PROBED, missingKernelReason, missingKernels } from "../../web/lib/choice/kernels.js";

test("the table covers every bundle a runtime loads, and lists only probed operators", () => {
  assert.deepEqual(Object.keys(MISSING).sort(), ["wasm", "webgpu", "webnn"]);
  for (const [bundle, ops] of Object.entries(MISSING)) {
    for (const op of ops) assert.ok(PROBED.includes(op), `${bundle}: ${op} is not a probed operator`);
  }
  // What the issue met: a forest pinned to WebGPU failed with "No Op registered".
  assert.ok(MISSING.webgpu.includes("ai.onnx.ml/TreeEnsembleClassifier"));
  assert.deepEqual(MISSING.wasm, []);
});

test("wasm-1t loads the wasm bundle; an unknown operator is assumed present", () => {
  const ops = ["ai.onnx.ml/TreeEnsembleClassifier", "ai.onnx/Conv", "ai.onnx/SomethingNew"];
  assert.deepEqual(missingKernels("wasm-1t", ops), []);
  assert.deepEqual(missingKernels("webgpu", ops), ["ai.onnx.ml/TreeEnsembleClassifier"]);
  assert.deepEqual(missingKernels("webgpu", undefined), []);
});

test("a domain whose every probed operator is missing is missing whole (ai.onnx.ml on ort.webgpu)", () => {
  assert.deepEqual(missingKernels("webgpu", ["ai.onnx.ml/TreeEnsemble", "ai.onnx.ml/CategoryMapper"]),
    ["ai.onnx.ml/TreeEnsemble", "ai.onnx.ml/CategoryMapper"]);
  assert.deepEqual(missingKernels("webgpu", ["com.microsoft/NotProbed"]), []);
});

test("the reason names up to three operators and counts the rest", () => {
  assert.equal(missingKernelReason("wasm", ["ai.onnx.ml/Scaler"]), null);
  assert.equal(missingKernelReason("webgpu", ["ai.onnx.ml/Scaler", "ai.onnx.ml/Normalizer", "ai.onnx.ml/ZipMap", "ai.onnx.ml/Binarizer", "ai.onnx/Add"]),
    "its onnxruntime-web bundle has no kernel for ai.onnx.ml/Scaler, ai.onnx.ml/Normalizer, ai.onnx.ml/ZipMap and 1 more");
});
