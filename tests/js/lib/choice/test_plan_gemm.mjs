// A tree ensemble's plan (web/lib/choice/plan.js): WebGPU's bundle has no ai.onnx.ml kernel, so on WebGPU the step
// is the `gemm` form alone (tree ensembles as tensor operators), never the variant as built nor a fallback
// to it; on WebAssembly the variant as built and the form are chosen between by measurement, as any form.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { buildPlan } = await import("../../../../web/lib/choice/plan.js");
const { formOperatorTypes } = await import("../../../../web/lib/choice/forms.js");
const { deviceKind } = await import("../../../../web/lib/choice/probe.js");
const { rememberTrial } = await import("../../../../web/lib/choice/threads.js");

const UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";
const GPU = { vendor: "nvidia", architecture: "ampere", device: "", description: "", fallback: false };
const DEVICE = {
  webgpu: true,
  adapter: GPU,
  shaderF16: false,
  webnn: false,
  webnnReason: "no navigator.ml",
  crossOriginIsolated: true,
  hardwareConcurrency: 2,
  wasmSimd: true,
  userAgent: UA,
};

const GEMM = {
  status: "ok",
  reason: null,
  format: "onnx",
  optimization: "tree-gemm",
  tool: "onnxport tree_tensors",
  runtimes: null,
  file: "artifacts/gemm.onnx",
  sha256: "sha-gemm",
  bytes: 28e3,
  reference: { file: "artifacts/ref-gemm.json", sha256: "ref-gemm", bytes: 10, rows: 1, golden_set: 0 },
  operators: { Gather: 2, LessOrEqual: 1, MatMul: 2, Equal: 1, Cast: 2, Sigmoid: 1 },
};
const MODEL = {
  name: "trees",
  task: "classification",
  variants: {
    fp32: {
      status: "ok",
      precision: "fp32",
      file: "artifacts/fp32.onnx",
      sha256: "sha-fp32",
      bytes: 21e3,
      speed: { native_ms: 0.1 },
      operator_types: ["ai.onnx.ml/TreeEnsembleClassifier", "ai.onnx/Identity"],
      forms: { gemm: GEMM },
    },
  },
};

function plan(model = MODEL, extra = {}) {
  return buildPlan(model, DEVICE, {
    fileUrl: (f) => `https://s/${f}`,
    cached: new Set(),
    verify: "first-use",
    ortVersion: "1.30.0",
    ...extra,
  });
}

// wasm on 2 threads measured faster than one here (threads.js), so the rows below are for "wasm"
beforeEach(() => {
  storage.clear();
  rememberTrial(DEVICE, { oneMs: 20, manyMs: 12, model: "other", variant: "fp32", sha256: "sha-other" });
});

test("a form's operator types come from its histogram, domains restored", () => {
  assert.deepEqual(formOperatorTypes({ operators: { MatMul: 1, "ai.onnx.ml.ZipMap": 1 } }, {}), [
    "ai.onnx/MatMul",
    "ai.onnx.ml/ZipMap",
  ]);
  assert.deepEqual(formOperatorTypes({ format: "ort" }, { operator_types: ["ai.onnx/Add"] }), ["ai.onnx/Add"]);
});

test("WebGPU runs the gemm form alone, with the reason, and no fallback to the ai.onnx.ml file", () => {
  const { steps, skipped } = plan();
  const webgpu = steps.filter((s) => s.runtime === "webgpu");
  assert.deepEqual(
    webgpu.map((s) => s.form),
    ["gemm"],
  );
  assert.match(
    webgpu[0].why,
    /gemm form \(tree-gemm, onnx\), as the variant as built cannot run here \(its onnxruntime-web bundle has no kernel for ai\.onnx\.ml\/TreeEnsembleClassifier\)/,
  );
  assert.ok(!skipped.some((s) => s.runtime === "webgpu"));
  // webnn is unavailable here; wasm keeps its usual pair (no measurement: the variant as built)
  assert.deepEqual(
    steps.filter((s) => s.runtime === "wasm").map((s) => s.form),
    [null],
  );
});

test("without a gemm form, or with one that carries an ai.onnx.ml operator, WebGPU is left out as before", () => {
  const none = structuredClone(MODEL);
  delete none.variants.fp32.forms.gemm;
  assert.match(
    plan(none).skipped.find((s) => s.runtime === "webgpu").reason,
    /no kernel for ai\.onnx\.ml\/TreeEnsembleClassifier/,
  );
  const zipmap = structuredClone(MODEL);
  zipmap.variants.fp32.forms.gemm.operators["ai.onnx.ml.ZipMap"] = 1;
  assert.ok(!plan(zipmap).steps.some((s) => s.runtime === "webgpu"));
});

test("a gemm form onnxport check found wrong on WebGPU here is not taken", () => {
  const conformance = {
    verdicts: [
      { sha256: "sha-gemm", runtime: "webgpu", status: "fail", reason: "max abs 0.5", device_kind: deviceKind(DEVICE) },
    ],
  };
  const { steps, skipped } = plan(MODEL, { conformance });
  assert.ok(!steps.some((s) => s.runtime === "webgpu"));
  assert.match(
    skipped.find((s) => s.runtime === "webgpu").reason,
    /the gemm form: onnxport check on this kind of device found it wrong: max abs 0\.5/,
  );
});

test("on WebAssembly the gemm form is taken only when verified and measured to start sooner", () => {
  const row = (sha256, create) => ({
    model: "trees",
    variant: "fp32",
    runtime: "wasm",
    status: "ok",
    sha256,
    cached: { create_ms: create, first_run_ms: 1, total_ms: create + 5 },
    warm: { median_ms: 1 },
  });
  const verdict = { sha256: "sha-gemm", runtime: "wasm", status: "pass", device_kind: deviceKind(DEVICE) };
  const conformance = { verdicts: [verdict] };
  const faster = { browser: { device: DEVICE, results: [row("sha-fp32", 40), row("sha-gemm", 10)] } };
  const slower = { browser: { device: DEVICE, results: [row("sha-fp32", 10), row("sha-gemm", 40)] } };
  const wasm = (bench) => plan(MODEL, { bench, conformance }).steps.filter((s) => s.runtime === "wasm");
  assert.deepEqual(
    wasm(faster).map((s) => s.form),
    ["gemm", null],
  );
  assert.match(wasm(faster)[0].why, /gemm form \(tree-gemm, onnx\): .* to create, run first and run warm/);
  assert.deepEqual(
    wasm(slower).map((s) => s.form),
    [null],
  );
  assert.match(wasm(slower)[0].why, /as built: no verified form measured 10% faster \(gemm measured\)/);
});
