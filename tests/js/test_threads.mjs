// web/lib/choice/threads.js: how many WebAssembly threads a file runs on, by measurement, not by hardwareConcurrency
// alone (WebKitGTK says 4 on a 2-core machine, where 4 threads ran minilm 2 to 4 times slower than one).
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { storage } from "./helpers/memory-storage.mjs";

const { decide, DECISIVE_MS, rememberTrial, threadChoice, trialRuns, trials } = await import("../../web/lib/choice/threads.js");
const { buildPlan } = await import("../../web/lib/choice/plan.js");
const { ownSpeed } = await import("../../web/lib/memory/speeds.js");

const WEBKIT_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15";
const CHROME_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";
const device = (extra = {}) => ({ webgpu: false, adapter: null, webgpuReason: "this browser has no WebGPU (navigator.gpu is null)",
  shaderF16: false, webnn: false, webnnReason: "this browser has no WebNN (navigator.ml is missing)", crossOriginIsolated: true,
  sharedMemory: true, hardwareConcurrency: 4, wasmSimd: true, userAgent: WEBKIT_UA, ...extra });
const WEBKIT = device(); // says 4 cores on a 2-core machine
const CHROME = device({ hardwareConcurrency: 2, userAgent: CHROME_UA });

const MINILM = { sha256: "sha-minilm", speed: { native_ms: 8 } };
const DIGITS = { sha256: "sha-digits", speed: { native_ms: 6 } };
const IRIS = { sha256: "sha-iris", speed: { native_ms: 0.03 } };
// The figures measured in WebKitGTK 2.50 on this 2-core machine: minilm int8-dynamic, reference inputs, best warm run.
const WEBKIT_MINILM = { oneMs: 17, manyMs: 41, model: "minilm", variant: "int8-dynamic", sha256: MINILM.sha256 };

beforeEach(() => storage.clear());

test("threads are kept only when measured at least 10% faster than one", () => {
  assert.deepEqual(decide(42, 160, 4), { threads: 1, why: "one thread: 4 threads ran 160 ms per run, one 42 ms" });
  assert.deepEqual(decide(15, 9, 2), { threads: 2, why: "2 threads: 2 threads ran 9.0 ms per run, one 15 ms" });
  assert.deepEqual(decide(15, 14, 2), { threads: 1, why: "one thread: 2 threads ran 14 ms per run, one 15 ms (less than 10% faster)" });
});

test("a page without isolation or SharedArrayBuffer runs one thread, with the reason, and no trial", () => {
  const plain = threadChoice("wasm", MINILM, device({ crossOriginIsolated: false }));
  assert.deepEqual([plain.key, plain.threads, plain.trial], ["wasm-1t", 1, null]);
  assert.match(plain.why, /not cross-origin isolated/);
  const noShared = threadChoice("wasm", MINILM, device({ sharedMemory: false }));
  assert.deepEqual([noShared.key, noShared.threads, noShared.trial], ["wasm-1t", 1, null]);
  assert.match(noShared.why, /no SharedArrayBuffer/);
});

test("unmeasured: one thread, and the ceiling's threads are measured against it on this load", () => {
  const choice = threadChoice("wasm", MINILM, WEBKIT);
  assert.deepEqual([choice.key, choice.threads, choice.trial], ["wasm-1t", 1, { key: "wasm", threads: 4 }]);
  assert.equal(choice.why, "one thread until measured: 4 threads are measured against it after this load (up to 4 threads (the browser reports 4 cores))");
});

test("a model too small for threads to pay runs one thread without a trial", () => {
  const choice = threadChoice("wasm", IRIS, WEBKIT);
  assert.deepEqual([choice.key, choice.threads, choice.trial], ["wasm-1t", 1, null]);
  assert.match(choice.why, /a run takes about 0\.23 ms, too short for threads to pay/);
});

test("WebKit's trial (4 threads slower): this file and then every file on the device run one thread", () => {
  rememberTrial(WEBKIT, WEBKIT_MINILM);
  const same = threadChoice("wasm", MINILM, WEBKIT);
  assert.deepEqual([same.key, same.threads, same.trial], ["wasm-1t", 1, null]);
  assert.match(same.why, /^one thread: 4 threads ran 41 ms per run, one 17 ms \(this file's trial, \d{4}-\d\d-\d\d\)$/);
  const other = threadChoice("wasm", DIGITS, WEBKIT);
  assert.deepEqual([other.key, other.threads, other.trial], ["wasm-1t", 1, null]);
  assert.match(other.why, /on minilm int8-dynamic \(this device's trial/);
  // Another browser (another fingerprint) and another ceiling are other devices: measured afresh.
  assert.ok(threadChoice("wasm", DIGITS, CHROME).trial);
  assert.ok(threadChoice("wasm", DIGITS, device({ hardwareConcurrency: 2 })).trial);
});

test("a device whose threads paid runs them, as key wasm with its threads", () => {
  rememberTrial(CHROME, { oneMs: 15, manyMs: 9, model: "minilm", variant: "int8-dynamic", sha256: MINILM.sha256 });
  const choice = threadChoice("wasm", DIGITS, CHROME);
  assert.deepEqual([choice.key, choice.threads, choice.trial], ["wasm", 2, null]);
  assert.match(choice.why, /^2 threads: 2 threads ran 9\.0 ms per run, one 15 ms on minilm/);
});

test("a trial on a tiny model does not speak for the device; a decisive one is not replaced by a tiny one", () => {
  rememberTrial(WEBKIT, { oneMs: 0.05, manyMs: 0.2, model: "iris", variant: "fp32", sha256: IRIS.sha256 });
  assert.ok(threadChoice("wasm", MINILM, WEBKIT).trial, "iris's runs are too short to tell what threads do");
  rememberTrial(WEBKIT, WEBKIT_MINILM);
  rememberTrial(WEBKIT, { oneMs: 0.05, manyMs: 0.04, model: "iris", variant: "fp16", sha256: "sha-iris-fp16" });
  assert.equal(trials(WEBKIT).device.model, "minilm");
  assert.ok(trials(WEBKIT).device.one_ms >= DECISIVE_MS);
  assert.equal(threadChoice("wasm", DIGITS, WEBKIT).key, "wasm-1t");
});

test("the bench's two rows on this kind of device decide as a trial would", () => {
  const row = (runtime, ms) => ({ runtime, status: "ok", sha256: DIGITS.sha256, warm: { median_ms: ms } });
  const bench = { browser: { device: CHROME, results: [row("wasm", 3), row("wasm-1t", 5)] } };
  const choice = threadChoice("wasm", DIGITS, CHROME, { bench });
  assert.deepEqual([choice.key, choice.threads, choice.trial], ["wasm", 2, null]);
  assert.match(choice.why, /onnxport bench on this kind of device/);
});

test("runtimes that do not take all the page's threads keep their key", () => {
  assert.deepEqual(threadChoice("webgpu", MINILM, WEBKIT), { key: "webgpu", threads: 1, why: null, trial: null });
});

test("the plan: WebKit's first load of minilm is one thread with a trial, the next one without", () => {
  const model = { name: "minilm", task: "embedding", variants: { fp32: { status: "ok", precision: "fp32", file: "a/fp32.onnx", bytes: 1e6, ...MINILM } } };
  const plan = () => buildPlan(model, WEBKIT, { fileUrl: (f) => `https://s/${f}`, cached: new Set(), verify: "first-use", ortVersion: "1.30.0" });
  const first = plan().steps.find((s) => s.runtime === "wasm");
  assert.deepEqual([first.key, first.threads, first.trial], ["wasm-1t", 1, { key: "wasm", threads: 4 }]);
  assert.ok(first.why.endsWith(` + ${first.threadsWhy}`), first.why);
  rememberTrial(WEBKIT, { ...WEBKIT_MINILM, variant: "fp32" });
  const next = plan().steps.find((s) => s.runtime === "wasm");
  assert.deepEqual([next.key, next.threads, next.trial], ["wasm-1t", 1, null]);
  assert.match(next.why, /one thread: 4 threads ran 41 ms per run, one 17 ms/);
});

test("a trial: first runs where needed, then warm runs interleaved; the best of each, every run remembered", async () => {
  // Scripted sessions: each run returns the next of its timings (what a worker's run answers with).
  const scripted = (times, runs = 0) => ({ runs, order: [], async run() { this.runs += 1; order.push(this.name); return { runMs: times.shift() }; } });
  const order = [];
  const single = Object.assign(scripted([20, 18], 1), { name: "one" });
  const many = Object.assign(scripted([900, 60, 45]), { name: "many" });
  const result = await trialRuns({ single, many, inputs: {}, sha256: "sha-x", keys: { single: "wasm-1t", many: "wasm" } });
  assert.deepEqual(order, ["many", "one", "many", "one", "many"], "the one-thread session ran its first run already (its verification)");
  assert.deepEqual(result, { oneMs: 18, manyMs: 45, runs: { one: [20, 18], many: [60, 45] } });
  assert.equal(ownSpeed("sha-x", "wasm").first_ms, 900);
  assert.equal(ownSpeed("sha-x", "wasm").runs, 2);
  assert.equal(ownSpeed("sha-x", "wasm-1t").runs, 2);
});
