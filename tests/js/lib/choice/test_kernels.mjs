// web/lib/choice/kernels.js: the measured table of operators each onnxruntime-web bundle lacks
// (scripts/generate/measure_kernels.py) and the rule the plan applies to a variant's operator_types.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  MISSING,
  MISSING_FORMS,
  PROBED,
  missingKernelReason,
  missingKernels,
} from "../../../../web/lib/choice/kernels.js";

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
  assert.deepEqual(missingKernels("webgpu", ["ai.onnx.ml/TreeEnsemble", "ai.onnx.ml/CategoryMapper"]), [
    "ai.onnx.ml/TreeEnsemble",
    "ai.onnx.ml/CategoryMapper",
  ]);
  assert.deepEqual(missingKernels("webgpu", ["com.microsoft/NotProbed"]), []);
});

test("the reason names up to three operators and counts the rest", () => {
  assert.equal(missingKernelReason("wasm", ["ai.onnx.ml/Scaler"]), null);
  assert.equal(
    missingKernelReason("webgpu", [
      "ai.onnx.ml/Scaler",
      "ai.onnx.ml/Normalizer",
      "ai.onnx.ml/ZipMap",
      "ai.onnx.ml/Binarizer",
      "ai.onnx/Add",
    ]),
    "its onnxruntime-web bundle has no kernel for ai.onnx.ml/Scaler, ai.onnx.ml/Normalizer, ai.onnx.ml/ZipMap and 1 more",
  );
});

test("the weight-only operators are probed: present on wasm and webgpu, GatherBlockQuantized absent from webnn's CPU kernels", () => {
  for (const op of ["com.microsoft/MatMulNBits", "com.microsoft/GatherBlockQuantized", "ai.onnx/DequantizeLinear"]) {
    assert.ok(PROBED.includes(op), op);
  }
  const ops = [
    "com.microsoft/MatMulNBits",
    "com.microsoft/GatherBlockQuantized",
    "ai.onnx/DequantizeLinear",
    "ai.onnx/MatMul",
  ];
  assert.deepEqual(missingKernels("wasm", ops), []);
  assert.deepEqual(missingKernels("webgpu", ops), []);
  assert.deepEqual(missingKernels("webnn", ops), ["com.microsoft/GatherBlockQuantized"]);
});

test("forms missing for some operators only are a table of their own, per bundle, of probed operators", () => {
  assert.deepEqual(Object.keys(MISSING_FORMS).sort(), Object.keys(MISSING).sort());
  for (const [bundle, byOp] of Object.entries(MISSING_FORMS)) {
    for (const [op, forms] of Object.entries(byOp)) {
      assert.ok(PROBED.includes(op), `${bundle}: ${op} is not a probed operator`);
      assert.ok(!MISSING[bundle].includes(op), `${bundle}: ${op} is missing whole and in part`);
      assert.ok(forms.length > 0, `${bundle}: ${op} names no form`);
    }
  }
});
