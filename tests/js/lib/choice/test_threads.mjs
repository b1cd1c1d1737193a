// web/lib/choice/threads.js and paired-runs.js: how many WebAssembly threads a file runs on: the priors' count (all
// the page's threads unless the browser overstates its cores: WebKitGTK says 4 on a 2-core machine, where 4 threads
// ran minilm 2 to 4 times slower than one), then a paired trial that stops when the difference is clear.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { decide, DECISIVE_MS, RECHECK_DAYS, rememberTrial, threadChoice, trialRuns, trials } = await import(
  "../../../../web/lib/choice/threads.js"
);
const {
  BUDGET_MS,
  coinTail,
  enough,
  MAX_PAIRS,
  MAX_WARMUP_RUNS,
  pairedVerdict,
  trialOutcome,
  WARMUP_MS,
  WARMUP_RUNS,
  warmedUp,
} = await import("../../../../web/lib/choice/paired-runs.js");
const { buildPlan } = await import("../../../../web/lib/choice/plan.js");
const { ownSpeed } = await import("../../../../web/lib/remembered/speeds.js");

const WEBKIT_UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15";
const CHROME_UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";
const device = (extra = {}) => ({
  webgpu: false,
  adapter: null,
  webgpuReason: "this browser has no WebGPU (navigator.gpu is null)",
  shaderF16: false,
  webnn: false,
  webnnReason: "this browser has no WebNN (navigator.ml is missing)",
  crossOriginIsolated: true,
  sharedMemory: true,
  hardwareConcurrency: 4,
  wasmSimd: true,
  userAgent: WEBKIT_UA,
  ...extra,
});
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
  assert.deepEqual(decide(15, 14, 2), {
    threads: 1,
    why: "one thread: 2 threads ran 14 ms per run, one 15 ms (less than 10% faster)",
  });
});

test("a page without isolation or SharedArrayBuffer runs one thread, with the reason, and no trial", () => {
  const plain = threadChoice("wasm", MINILM, device({ crossOriginIsolated: false }));
  assert.deepEqual([plain.key, plain.threads, plain.trial], ["wasm-1t", 1, null]);
  assert.match(plain.why, /not cross-origin isolated/);
  const noShared = threadChoice("wasm", MINILM, device({ sharedMemory: false }));
  assert.deepEqual([noShared.key, noShared.threads, noShared.trial], ["wasm-1t", 1, null]);
  assert.match(noShared.why, /no SharedArrayBuffer/);
});

test("unmeasured, on a browser that overstates its cores (WebKit): one thread, and the ceiling's threads measured after this load", () => {
  const choice = threadChoice("wasm", MINILM, WEBKIT);
  assert.deepEqual([choice.key, choice.threads, choice.trial], ["wasm-1t", 1, { key: "wasm", threads: 4 }]);
  assert.equal(
    choice.why,
    "one thread until measured (WebKitGTK reports 4 cores, which can be more than the machine has): 4 threads are measured against it after this load",
  );
});

test("unmeasured, in Chromium on 2 cores: all the page's threads, and one thread measured against them after this load", () => {
  const choice = threadChoice("wasm", MINILM, CHROME);
  assert.deepEqual([choice.key, choice.threads, choice.trial], ["wasm", 2, { key: "wasm-1t", threads: 1 }]);
  assert.equal(
    choice.why,
    "2 threads until measured, all the page's (2 threads (the browser reports 2 cores)): one thread is measured against them after this load",
  );
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
  const model = {
    name: "minilm",
    task: "embedding",
    variants: { fp32: { status: "ok", precision: "fp32", file: "a/fp32.onnx", bytes: 1e6, ...MINILM } },
  };
  const plan = () =>
    buildPlan(model, WEBKIT, {
      fileUrl: (f) => `https://s/${f}`,
      cached: new Set(),
      verify: "first-use",
      ortVersion: "1.30.0",
    });
  const first = plan().steps.find((s) => s.runtime === "wasm");
  assert.deepEqual([first.key, first.threads, first.trial], ["wasm-1t", 1, { key: "wasm", threads: 4 }]);
  assert.ok(first.why.endsWith(` + ${first.threadsWhy}`), first.why);
  rememberTrial(WEBKIT, { ...WEBKIT_MINILM, variant: "fp32" });
  const next = plan().steps.find((s) => s.runtime === "wasm");
  assert.deepEqual([next.key, next.threads, next.trial], ["wasm-1t", 1, null]);
  assert.match(next.why, /one thread: 4 threads ran 41 ms per run, one 17 ms/);
});

test("the sign test: a coin's tail, and pairs clear only when as lopsided as a coin gives at most 2.5% of the time", () => {
  assert.equal(coinTail(6, 6), 1 / 64);
  assert.equal(coinTail(0, 6), 1);
  assert.equal(coinTail(8, 9), 10 / 512);
  const pairs = (faster, slower) => [
    ...Array(faster).fill({ one: 70, many: 40 }),
    ...Array(slower).fill({ one: 70, many: 69 }),
  ];
  assert.equal(pairedVerdict(pairs(5, 0)).clear, null, "5 of 5 happens 3% of the time by chance");
  assert.deepEqual(pairedVerdict(pairs(6, 0)), {
    pairs: 6,
    votes: 6,
    clear: "many",
    ratio: 40 / 70,
    oneMs: 70,
    manyMs: 40,
  });
  assert.equal(pairedVerdict(pairs(7, 1)).clear, null);
  assert.equal(pairedVerdict(pairs(8, 1)).clear, "many");
  // Less than 10% faster is a vote for one thread: N threads must pay for the cores they take.
  assert.equal(pairedVerdict(pairs(0, 6)).clear, "one");
  assert.equal(pairedVerdict([]).clear, null);
});

test("a trial stops when clear, after MAX_PAIRS pairs, or past its time budget", () => {
  assert.equal(enough({ pairs: 3, clear: null }, 100), false);
  assert.equal(enough({ pairs: 6, clear: "many" }, 100), true);
  assert.equal(enough({ pairs: MAX_PAIRS, clear: null }, 100), true);
  assert.equal(enough({ pairs: 3, clear: null }, BUDGET_MS), true);
});

test("an undecided trial keeps the prior's count; a clear one takes the faster count; the why gives the figures", () => {
  const clear = pairedVerdict(Array(6).fill({ one: 71.8, many: 42.8 }));
  assert.deepEqual(trialOutcome(clear, 2, 2), {
    threads: 2,
    decided: true,
    why: "2 threads: 2 threads took 0.60x the time of one (43 ms against 72 ms, medians of 6 paired runs; 6 of 6 pairs 10% faster on 2 threads)",
  });
  const slower = pairedVerdict(Array(6).fill({ one: 17, many: 41 }));
  assert.deepEqual([trialOutcome(slower, 4, 1).threads, trialOutcome(slower, 4, 1).decided], [1, true]);
  assert.match(trialOutcome(slower, 4, 1).why, /^one thread: 4 threads took 2\.41x the time of one/);
  const noisy = pairedVerdict([
    { one: 50, many: 40 },
    { one: 50, many: 48 },
    { one: 50, many: 44 },
    { one: 50, many: 46 },
  ]);
  assert.deepEqual([trialOutcome(noisy, 2, 2).threads, trialOutcome(noisy, 2, 2).decided], [2, false]);
  assert.match(
    trialOutcome(noisy, 2, 2).why,
    /^2 threads, as before the trial: no clear difference \(2 threads took 0\.90x .* 2 of 4 pairs/,
  );
  assert.equal(trialOutcome(noisy, 4, 1).threads, 1);
});

// Scripted sessions: each run returns the next of its timings (what a worker's run answers with), in one order.
function scripted(name, times, order, runs = 0) {
  return {
    runs,
    async run() {
      this.runs += 1;
      order.push(name);
      return { runMs: times(this.runs) };
    },
  };
}

test("a trial: warm-up runs that do not count, then pairs alternating A B, B A until clear; timed runs remembered", async () => {
  const order = [];
  // The one-thread session ran once already (its verification); the new one's first run is slow.
  const single = scripted("one", () => 70, order, 1);
  const many = scripted("many", (n) => (n === 1 ? 900 : 40), order);
  const result = await trialRuns({
    single,
    many,
    inputs: {},
    sha256: "sha-x",
    keys: { single: "wasm-1t", many: "wasm" },
  });
  // Warm-up pairs until WARMUP_MS: 900 + 70, then 110 ms a pair.
  const warmPairs = 1 + Math.ceil((WARMUP_MS - 970) / 110);
  assert.deepEqual(order.slice(0, 2 * warmPairs), Array(warmPairs).fill(["one", "many"]).flat());
  assert.deepEqual(order.slice(2 * warmPairs), [
    "one",
    "many",
    "many",
    "one",
    "one",
    "many",
    "many",
    "one",
    "one",
    "many",
    "many",
    "one",
  ]);
  assert.deepEqual([result.pairs, result.votes, result.clear, result.oneMs, result.manyMs], [6, 6, "many", 70, 40]);
  assert.deepEqual(result.runs, { one: Array(6).fill(70), many: Array(6).fill(40) });
  assert.equal(ownSpeed("sha-x", "wasm").first_ms, 900, "a fresh session's first run is remembered as its first");
  assert.equal(ownSpeed("sha-x", "wasm").runs, 6, "warm-up runs are not remembered as warm runs");
  assert.equal(ownSpeed("sha-x", "wasm-1t").runs, 6);
});

test("warm-up: at least WARMUP_RUNS a side and WARMUP_MS in all, at most MAX_WARMUP_RUNS a side", () => {
  assert.equal(warmedUp(WARMUP_RUNS - 1, 10 * WARMUP_MS), false);
  assert.equal(warmedUp(WARMUP_RUNS, WARMUP_MS - 1), false);
  assert.equal(warmedUp(WARMUP_RUNS, WARMUP_MS), true);
  assert.equal(warmedUp(MAX_WARMUP_RUNS, 0), true, "sub-millisecond runs do not warm up forever");
});

test("a trial with no clear difference stops at MAX_PAIRS; one with long runs stops at its time budget", async () => {
  const order = [];
  // Alternating winners: N threads 10% faster in every other pair only.
  const even = await trialRuns({
    single: scripted("one", () => 50, order, 1),
    many: scripted("many", (n) => (n % 2 ? 44 : 49), order, 1),
    inputs: {},
    sha256: "sha-y",
    keys: { single: "wasm-1t", many: "wasm" },
  });
  assert.deepEqual([even.pairs, even.clear], [MAX_PAIRS, null]);
  const slow = await trialRuns({
    single: scripted("one", () => 900, order, 1),
    many: scripted("many", () => 600, order, 1),
    inputs: {},
    sha256: "sha-z",
    keys: { single: "wasm-1t", many: "wasm" },
  });
  assert.ok(slow.pairs < 6 && slow.clear === null, `stopped by the budget after ${slow.pairs} pairs`);
});

test("a remembered trial is re-checked after RECHECK_DAYS: its count is the prior, and a trial of the other runs", () => {
  rememberTrial(CHROME, {
    oneMs: 72,
    manyMs: 43,
    model: "minilm",
    variant: "int8-dynamic",
    sha256: MINILM.sha256,
    threads: 2,
    pairs: 6,
    votes: 6,
    ratio: 0.6,
  });
  const fresh = threadChoice("wasm", MINILM, CHROME);
  assert.deepEqual([fresh.key, fresh.threads, fresh.trial], ["wasm", 2, null]);
  assert.match(
    fresh.why,
    /^2 threads: 2 threads took 0\.60x the time of one \(43 ms against 72 ms, medians of 6 paired runs; 6 of 6 pairs 10% faster on 2 threads\) \(this file's trial, /,
  );
  const later = Date.now() + RECHECK_DAYS * 86_400_000;
  const again = threadChoice("wasm", MINILM, CHROME, { now: later });
  assert.deepEqual([again.key, again.threads, again.trial], ["wasm", 2, { key: "wasm-1t", threads: 1 }]);
  assert.match(again.why, /measured again after this load, 30 days on$/);
  // The device's trial speaks for another file until it is as old, then that file runs a trial of its own.
  assert.deepEqual(threadChoice("wasm", DIGITS, CHROME).trial, null);
  assert.deepEqual(threadChoice("wasm", DIGITS, CHROME, { now: later }).trial, { key: "wasm-1t", threads: 1 });
});

test("an undecided trial speaks for its file only, not for the device", () => {
  rememberTrial(CHROME, {
    oneMs: 50,
    manyMs: 47,
    model: "minilm",
    variant: "fp32",
    sha256: MINILM.sha256,
    threads: 2,
    decided: false,
    pairs: 20,
    votes: 9,
    ratio: 0.94,
  });
  const same = threadChoice("wasm", MINILM, CHROME);
  assert.deepEqual([same.threads, same.trial], [2, null]);
  assert.match(same.why, /^2 threads: no clear difference \(2 threads took 0\.94x/);
  assert.deepEqual(
    threadChoice("wasm", DIGITS, CHROME).trial,
    { key: "wasm-1t", threads: 1 },
    "another file measures for itself",
  );
});
