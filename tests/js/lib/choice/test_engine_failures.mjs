// What other engines do wrong, as the library sees it (node --test): Firefox's WebGPU failing minilm fp16 at its
// first run (a remembered verdict the plan then skips), and a software adapter known by its flag, its empty info
// or its measured speed, ranked last.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { engineError, lastingFailure } = await import("../../../../web/lib/verification/verify.js");
const { buildPlan } = await import("../../../../web/lib/choice/plan.js");
const { SOFTWARE_RATIO, softwareReason } = await import("../../../../web/lib/choice/cost.js");
const { recordRun } = await import("../../../../web/lib/remembered/speeds.js");
const { rememberTrial } = await import("../../../../web/lib/choice/threads.js");
const { remember } = await import("../../../../web/lib/choice/artifact-verdicts.js");

// Word for word what onnxruntime-web 1.30 threw in Firefox ESR 153 (lavapipe) at minilm fp16's first run.
const FIREFOX_FP16 =
  "failed to call OrtRun(). ERROR_CODE: 1, ERROR_MESSAGE: /mnt/azure_nvme_temp/_work/1/s/onnxruntime/core/providers/webgpu/buffer_manager.cc:525 void onnxruntime::webgpu::BufferManager::Upload(void *, WGPUBuffer, size_t) const [ONNXRuntimeError] : 1 : FAIL : Failed to create a WebGPU compute pipeline: ShaderModule with 'Clip' label is invalid\n";
const FIREFOX_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0";
const LAVAPIPE = { vendor: "", architecture: "", device: "", description: "", fallback: true };
const UNNAMED = { vendor: "", architecture: "", device: "", description: "", fallback: false }; // says nothing of itself
const device = (adapter) => ({
  webgpu: true,
  adapter,
  webgpuReason: null,
  shaderF16: true,
  webnn: false,
  webnnReason: "no WebNN",
  crossOriginIsolated: true,
  sharedMemory: true,
  hardwareConcurrency: 2,
  wasmSimd: true,
  userAgent: FIREFOX_UA,
});

const variant = (name, precision, nativeMs) => ({
  status: "ok",
  precision,
  file: `artifacts/${name}.onnx`,
  sha256: `sha-${name}`,
  bytes: 1e6,
  speed: { native_ms: nativeMs },
});
const MODEL = {
  name: "minilm",
  task: "embedding",
  variants: { fp32: variant("fp32", "fp32", 20), fp16: variant("fp16", "fp16", 18) },
};
const plan = (dev, extra = {}) =>
  buildPlan(MODEL, dev, {
    fileUrl: (f) => `https://s/${f}`,
    cached: new Set(),
    verify: "first-use",
    ortVersion: "1.30.0",
    ...extra,
  });

beforeEach(() => {
  storage.clear();
  for (const adapter of [LAVAPIPE, UNNAMED])
    rememberTrial(device(adapter), { oneMs: 15, manyMs: 9, model: "m", variant: "fp32", sha256: "sha-m" });
});

test("an engine's error is said in its own words, without onnxruntime's call site", () => {
  assert.equal(
    engineError(FIREFOX_FP16),
    "Failed to create a WebGPU compute pipeline: ShaderModule with 'Clip' label is invalid",
  );
  assert.equal(
    engineError("failed to call OrtRun(). ERROR_CODE: 6, ERROR_MESSAGE: Non-zero status code"),
    "Non-zero status code",
  );
  assert.equal(engineError("plain words"), "plain words");
  assert.equal(lastingFailure(FIREFOX_FP16), true);
  assert.equal(lastingFailure("webgpu: out of memory"), false);
  assert.equal(lastingFailure("GPU device was lost"), false);
});

test("a WebGPU failure remembered at first use is skipped after, with its reason, and the next runtime is first", () => {
  const dev = device(LAVAPIPE);
  recordRun("sha-fp16", "webgpu", 0.1, false); // measured fast: webgpu fp16 ranks first, as on a real GPU
  assert.deepEqual([plan(dev).steps[0].runtime, plan(dev).steps[0].variant], ["webgpu", "fp16"]);
  const reason = `webgpu failed its first run on this device: ${engineError(FIREFOX_FP16)}`;
  remember("sha-fp16", "webgpu", "1.30.0", dev, { ok: false, reason, max_abs: null, basis: "error" });
  const { steps, skipped } = plan(dev);
  assert.ok(!steps.some((s) => s.runtime === "webgpu" && s.variant === "fp16"));
  assert.match(
    skipped.find((s) => s.runtime === "webgpu" && s.variant === "fp16").reason,
    /^webgpu failed its first run on this device: Failed to create a WebGPU compute pipeline: ShaderModule with 'Clip' label is invalid \(verified \d{4}-\d\d-\d\d; not tried again\)$/,
  );
  assert.notEqual(steps[0].runtime, "webgpu");
});

test("Firefox's lavapipe (flagged, empty info) ranks after WebAssembly, and says why", () => {
  const dev = device(LAVAPIPE);
  assert.match(softwareReason("webgpu", dev), /software WebGPU adapter/);
  const runtimes = plan(dev).steps.map((s) => s.runtime);
  assert.ok(runtimes.lastIndexOf("wasm") < runtimes.indexOf("webgpu"), runtimes.join(","));
});

test("an adapter that does not say it is software, measured far slower than WebAssembly, is ranked as one", () => {
  const dev = device(UNNAMED);
  assert.equal(softwareReason("webgpu", dev), null);
  assert.equal(plan(dev).steps[0].runtime, "webgpu", "unmeasured, it is taken as a GPU");
  // Another file measured here: 2,323 ms on WebGPU against 15 ms on WebAssembly (Firefox's lavapipe, minilm fp32).
  recordRun("sha-other", "wasm", 15, false);
  recordRun("sha-other", "webgpu", 2323, false);
  assert.match(softwareReason("webgpu", dev), /^measured 155x slower than WebAssembly on a file here/);
  const { steps } = plan(dev);
  assert.equal(steps[0].runtime, "wasm");
  assert.match(steps.find((s) => s.runtime === "webgpu").why, /measured 155x slower than WebAssembly/);
  assert.equal(softwareReason("wasm", dev), null, "only a GPU runtime has a software adapter");
});

test("a tiny model's slow GPU dispatch does not make an adapter software", () => {
  const dev = device(UNNAMED);
  recordRun("sha-iris", "wasm", 0.05, false);
  recordRun("sha-iris", "webgpu", 2, false); // 40x, but 2 ms is a GPU's dispatch, not its speed
  assert.ok(2 / 0.05 > SOFTWARE_RATIO);
  assert.equal(softwareReason("webgpu", dev), null);
});
