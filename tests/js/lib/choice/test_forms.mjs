// The plan's choice among a variant's files (web/lib/choice/forms.js): a form only where it is verified
// and measured faster, on this device or on a device of this kind (node --test; no browser needed).
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { buildPlan } = await import("../../../../web/lib/choice/plan.js");
const { fileRecord, servedForms } = await import("../../../../web/lib/choice/forms.js");
const { deviceKind } = await import("../../../../web/lib/choice/probe.js");
const { remember } = await import("../../../../web/lib/choice/artifact-verdicts.js");
const { rememberTrial } = await import("../../../../web/lib/choice/threads.js");

const UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";
const DEVICE = {
  webgpu: false,
  adapter: null,
  webgpuReason: "no adapter",
  shaderF16: false,
  webnn: false,
  webnnReason: "no navigator.ml",
  crossOriginIsolated: true,
  hardwareConcurrency: 2,
  wasmSimd: true,
  userAgent: UA,
};
const OTHER_KIND = { ...DEVICE, hardwareConcurrency: 8 };

function form(name, format, optimization, bytes) {
  return {
    status: "ok",
    reason: null,
    format,
    optimization,
    file: `artifacts/${name}.${format}`,
    sha256: `sha-${name}`,
    bytes,
    reference: { file: `artifacts/ref-${name}.json`, sha256: `ref-${name}`, bytes: 10, rows: 1, golden_set: 0 },
  };
}

const MODEL = {
  name: "m",
  task: "embedding",
  variants: {
    fp32: {
      status: "ok",
      precision: "fp32",
      file: "artifacts/fp32.onnx",
      sha256: "sha-fp32",
      bytes: 1e6,
      speed: { native_ms: 10 },
      forms: {
        ort: { ...form("fp32-ort", "ort", "extended", 1.01e6), runtimes: ["wasm", "wasm-1t"] },
        basic: form("fp32-basic", "onnx", "basic", 1e6),
        fused: { status: "rejected", reason: "outside budget", format: "onnx", optimization: "transformer", tool: "t" },
      },
    },
  },
};

// A bench on `device`: the variant as built and each form, by cached create + first run + warm.
function bench(device, { asBuilt = 300, ort = 150, basic = 320 } = {}) {
  const row = (sha256, create) => ({
    model: "m",
    variant: "fp32",
    runtime: "wasm",
    status: "ok",
    sha256,
    cached: { create_ms: create, first_run_ms: 40, total_ms: create + 200 },
    warm: { median_ms: 30 },
  });
  return {
    browser: { device, results: [row("sha-fp32", asBuilt), row("sha-fp32-ort", ort), row("sha-fp32-basic", basic)] },
  };
}

const passed = (sha256, device = DEVICE) => ({
  sha256,
  runtime: "wasm",
  status: "pass",
  device_kind: deviceKind(device),
});

function first(context) {
  const { steps } = buildPlan(MODEL, DEVICE, {
    fileUrl: (f) => `https://s/${f}`,
    cached: new Set(),
    verify: "first-use",
    ortVersion: "1.30.0",
    ...context,
  });
  return steps.find((s) => s.runtime === "wasm");
}

// This device measured its 2 threads faster than one (threads.js), so wasm runs as "wasm", as the forms' rows say.
beforeEach(() => {
  storage.clear();
  rememberTrial(DEVICE, { oneMs: 20, manyMs: 12, model: "other", variant: "fp32", sha256: "sha-other" });
});

test("only served forms are offered, and a form's record keeps the variant's precision", () => {
  assert.deepEqual(
    servedForms(MODEL.variants.fp32).map(([name]) => name),
    ["ort", "basic"],
  );
  const record = fileRecord(MODEL.variants.fp32, "ort");
  assert.equal(record.sha256, "sha-fp32-ort");
  assert.equal(record.precision, "fp32");
  assert.equal(fileRecord(MODEL.variants.fp32, null), MODEL.variants.fp32);
  assert.throws(() => fileRecord(MODEL.variants.fp32, "fused"), /form "fused" is not served; served forms: ort, basic/);
});

test("a form verified on this kind of device and measured faster is chosen, and the plan says why", () => {
  const step = first({
    bench: bench(DEVICE),
    conformance: { verdicts: [passed("sha-fp32-ort"), passed("sha-fp32-basic")] },
  });
  assert.equal(step.form, "ort");
  assert.match(
    step.why,
    /ort form \(extended, ort\): 220 ms to create, run first and run warm, against 370 ms as built \(onnxport bench on this kind of device; verified by onnxport check/,
  );
  assert.match(step.why, /1\.0 MB to download, time unknown/);
});

test("a faster form that nothing verified is not chosen", () => {
  assert.equal(first({ bench: bench(DEVICE), conformance: { verdicts: [] } }).form, null);
});

test("a form verified in this browser counts as verified", () => {
  remember("sha-fp32-ort", "wasm", "1.30.0", DEVICE, { ok: true, reason: null, max_abs: 0 });
  const step = first({ bench: bench(DEVICE) });
  assert.equal(step.form, "ort");
  assert.match(step.why, /verified in this browser/);
});

test("a form onnxport check failed here is not chosen, however fast", () => {
  const failed = { ...passed("sha-fp32-ort"), status: "fail" };
  remember("sha-fp32-ort", "wasm", "1.30.0", DEVICE, { ok: true, reason: null, max_abs: 0 });
  assert.equal(first({ bench: bench(DEVICE), conformance: { verdicts: [failed] } }).form, null);
});

test("verified forms measured slower keep the variant as built, and the plan says they were measured", () => {
  const step = first({
    bench: bench(DEVICE, { ort: 400, basic: 500 }),
    conformance: { verdicts: [passed("sha-fp32-ort"), passed("sha-fp32-basic")] },
  });
  assert.equal(step.form, null);
  assert.match(step.why, /as built: no verified form measured 10% faster \(ort, basic measured\)/);
});

test("a bench from another kind of device decides nothing", () => {
  const step = first({ bench: bench(OTHER_KIND), conformance: { verdicts: [passed("sha-fp32-ort", OTHER_KIND)] } });
  assert.equal(step.form, null);
});

test("a pinned variant still gets its fastest verified form", () => {
  const { steps } = buildPlan(MODEL, DEVICE, {
    pin: { runtime: "wasm", variant: "fp32" },
    fileUrl: (f) => f,
    cached: new Set(),
    verify: "first-use",
    ortVersion: "1.30.0",
    bench: bench(DEVICE, { basic: 100 }),
    conformance: { verdicts: [passed("sha-fp32-ort"), passed("sha-fp32-basic")] },
  });
  // The form first, then the variant as built, tried if the form fails.
  assert.deepEqual(
    steps.map((s) => [s.runtime, s.variant, s.form]),
    [
      ["wasm", "fp32", "basic"],
      ["wasm", "fp32", null],
    ],
  );
});

test("a pinned form is used as pinned; an unknown one, or one without its variant, is refused by name", () => {
  const context = { fileUrl: (f) => f, cached: new Set(), verify: "first-use", ortVersion: "1.30.0" };
  const { steps } = buildPlan(MODEL, DEVICE, { ...context, pin: { runtime: "wasm", variant: "fp32", form: "basic" } });
  assert.deepEqual(
    steps.map((s) => [s.runtime, s.variant, s.form]),
    [
      ["wasm", "fp32", "basic"],
      ["wasm", "fp32", null],
    ],
  );
  assert.match(steps[0].why, /basic form pinned/);
  assert.match(steps[1].why, /^as built, if the basic form fails: .*basic form pinned/);
  assert.throws(
    () => buildPlan(MODEL, DEVICE, { ...context, pin: { variant: "fp32", form: "fused" } }),
    /form "fused" is not served; served forms: ort, basic/,
  );
  assert.throws(() => buildPlan(MODEL, DEVICE, { ...context, pin: { form: "ort" } }), /pin the variant too/);
});

test("a form made for WebAssembly is not offered to WebGPU", () => {
  assert.deepEqual(
    servedForms(MODEL.variants.fp32, "webgpu").map(([name]) => name),
    ["basic"],
  );
  assert.deepEqual(
    servedForms(MODEL.variants.fp32, "wasm-1t").map(([name]) => name),
    ["ort", "basic"],
  );
});

test("a form within 10% of the variant as built is a tie, and the variant as built is kept", () => {
  const verdicts = { verdicts: [passed("sha-fp32-ort"), passed("sha-fp32-basic")] };
  assert.equal(
    first({ bench: bench(DEVICE, { asBuilt: 300, ort: 275, basic: 320 }), conformance: verdicts }).form,
    null,
  );
  assert.equal(
    first({ bench: bench(DEVICE, { asBuilt: 300, ort: 260, basic: 320 }), conformance: verdicts }).form,
    "ort",
  );
});
