// The plan ranks by what the page will pay (cost.js): the download once, the session's creation, and the runs it
// expects x the warm run; load()'s `expectedRuns` says how many, and each step's why names the term that decided.
// On minilm's files as the demo repository builds them (node --test; no browser needed).
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { buildPlan } = await import("../../../../web/lib/choice/plan.js");
const { cost, DEFAULT_EXPECTED_RUNS, expectedRuns } = await import("../../../../web/lib/choice/cost.js");
const { recordDownload, recordMeasured, recordRun } = await import("../../../../web/lib/remembered/speeds.js");
const { rememberTrial } = await import("../../../../web/lib/choice/threads.js");

const UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";
const DEVICE = {
  webgpu: false,
  adapter: null,
  shaderF16: false,
  webnn: false,
  webnnReason: "no navigator.ml",
  crossOriginIsolated: true,
  hardwareConcurrency: 2,
  wasmSimd: true,
  userAgent: UA,
};

// minilm's variants: bytes and native ms at build time as the demo repository has them; warm ms as Chromium
// ran them on WebAssembly (issue 43: int4 158 ms, int8-dynamic 72 ms, int8-weights 78 ms).
const FILES = {
  fp32: { bytes: 90454980, nativeMs: 11.7307, warmMs: 110 },
  fp16: { bytes: 45274700, nativeMs: 13.2674, warmMs: 160 },
  "int8-dynamic": { bytes: 22956969, nativeMs: 6.7625, warmMs: 72 },
  "int8-weights": { bytes: 23052015, nativeMs: 13.6617, warmMs: 78 },
  int4: { bytes: 16394930, nativeMs: 15.3132, warmMs: 158 },
};
const MINILM = {
  name: "minilm",
  task: "embedding",
  variants: Object.fromEntries(
    Object.entries(FILES).map(([name, f]) => [
      name,
      {
        status: "ok",
        precision: name,
        file: `artifacts/${name}.onnx`,
        sha256: `sha-${name}`,
        bytes: f.bytes,
        speed: { native_ms: f.nativeMs },
      },
    ]),
  ),
};

function plan(extra = {}) {
  return buildPlan(MINILM, DEVICE, {
    fileUrl: (f) => `https://s/${f}`,
    cached: new Set(),
    verify: "first-use",
    ortVersion: "1.30.0",
    ...extra,
  });
}

const first = (p) => p.steps[0];
const describe = (p) => p.steps.map((s) => `${s.runtime}/${s.variant}: ${s.why}`).join("\n");

// This browser's own warm runs of every file, on one thread and on the page's threads alike.
function measureWarmRuns() {
  for (const [name, f] of Object.entries(FILES)) {
    for (const key of ["wasm", "wasm-1t"]) recordRun(`sha-${name}`, key, f.warmMs, false);
  }
}

beforeEach(() => {
  storage.clear();
  rememberTrial(DEVICE, { oneMs: 20, manyMs: 12, model: "other", variant: "fp32", sha256: "sha-other" });
});

test("the default expects enough runs that the warm run decides: int8-dynamic over int4's smaller file", () => {
  measureWarmRuns();
  const p = plan();
  assert.deepEqual([first(p).runtime, first(p).variant], ["wasm", "int8-dynamic"], describe(p));
  assert.match(
    first(p).why,
    /^72 ms per run \(measured in this browser\) x 1000 expected runs \+ 21\.9 MB to download, time unknown/,
  );
  // The choice says what it was chosen over, and which term decided.
  assert.match(
    first(p).why,
    /over int4: its 86 ms faster run x 1000 expected runs \(86\.0 s\) outweighs int4's 6\.3 MB smaller download \(5\.2 s at 10 Mbit\/s, the rate an unmeasured download is weighed at\)/,
    first(p).why,
  );
  assert.match(
    first(p).why,
    /over int8-weights: its 6\.0 ms faster run x 1000 expected runs \(6\.0 s\) and its 0\.1 MB smaller download/,
    first(p).why,
  );
  assert.equal(DEFAULT_EXPECTED_RUNS, 1000);
});

test("on the priors alone (a fresh page: nothing measured, no bench), the default still takes int8-dynamic", () => {
  const p = plan();
  assert.equal(first(p).variant, "int8-dynamic", describe(p));
  assert.match(first(p).why, /\(prior: native 6\.8 ms at build time, .*not measured yet\) x 1000 expected runs/);
  assert.match(
    first(p).why,
    /over int4: its \S+ ms faster run x 1000 expected runs \(\S+ s\) outweighs int4's 6\.3 MB smaller download/,
  );
});

test("expectedRuns: 1 on a slow unmeasured link takes the smaller file, and says the download decided", () => {
  measureWarmRuns();
  const p = plan({ expectedRuns: 1 });
  assert.equal(first(p).variant, "int4", describe(p));
  assert.match(
    first(p).why,
    /^158 ms per run \(measured in this browser\) x 1 expected run \+ 15\.6 MB to download, time unknown/,
  );
  assert.match(
    first(p).why,
    /over int8-dynamic: its 6\.3 MB smaller download \(5\.2 s at 10 Mbit\/s, the rate an unmeasured download is weighed at\) outweighs int8-dynamic's 86 ms faster run x 1 expected run \(86 ms\)/,
    first(p).why,
  );
  // A slow link measured here does the same for a page that expects 100 runs: 6.3 MB at 1 Mbit/s is 52 s.
  recordDownload("https://s/artifacts/other.onnx", 1e6, 8000);
  const slow = plan({ expectedRuns: 100 });
  assert.equal(first(slow).variant, "int4", describe(slow));
  assert.match(
    first(slow).why,
    /its 6\.3 MB smaller download \(52\.5 s at 122 kB\/s, measured here\) outweighs int8-dynamic's 86 ms faster run x 100 expected runs \(8\.6 s\)/,
    first(slow).why,
  );
});

test("a cold start on a fast link measured here takes the faster run: its download costs less than one run's gain", () => {
  measureWarmRuns();
  recordDownload("https://s/artifacts/other.onnx", 40e6, 400); // 100 kB per ms, as localhost gives
  const p = plan({ expectedRuns: 1 });
  assert.equal(first(p).variant, "int8-dynamic", describe(p));
  assert.match(
    first(p).why,
    /over int4: its 86 ms faster run x 1 expected run \(86 ms\) outweighs int4's 6\.3 MB smaller download \(66 ms at 95 MB\/s, measured here\)/,
    first(p).why,
  );
});

test("once cached, the download weighs nothing, and the session's creation counts once measured for every step", () => {
  measureWarmRuns();
  const cached = new Set(Object.values(MINILM.variants).map((v) => `https://s/${v.file}`));
  const p = plan({ cached, expectedRuns: 1 });
  assert.equal(first(p).variant, "int8-dynamic", describe(p));
  // int4's session created 400 ms sooner than int8-dynamic's: for one run, that outweighs an 86 ms slower run,
  // but only once every step's creation is measured: an unmeasured one would win for being unmeasured.
  recordMeasured("sha-int4", "wasm", { warmMs: 158, createMs: 100 });
  recordMeasured("sha-int8-dynamic", "wasm", { warmMs: 72, createMs: 500 });
  const some = plan({ cached, expectedRuns: 1 });
  assert.equal(first(some).variant, "int8-dynamic", describe(some));
  assert.doesNotMatch(describe(some), /to create the session/);
  assert.equal(first(some).createMs, null);
  for (const name of ["fp32", "fp16", "int8-weights"])
    recordMeasured(`sha-${name}`, "wasm", { warmMs: FILES[name].warmMs, createMs: 600 });
  const created = plan({ cached, expectedRuns: 1 });
  assert.equal(first(created).variant, "int4", describe(created));
  assert.match(first(created).why, /100 ms to create the session \(measured in this browser\) \+ cached/);
  assert.match(
    first(created).why,
    /over int8-dynamic: its 400 ms quicker session creation \(measured in this browser\) outweighs int8-dynamic's 86 ms faster run x 1 expected run/,
    first(created).why,
  );
  assert.equal(first(created).createMs, 100);
  assert.equal(first(created).expectedMs, 100 + 158);
  // At the default's runs, the warm run decides again.
  assert.equal(first(plan({ cached })).variant, "int8-dynamic");
});

test("the page's cost, term by term: download once + creation + expected runs x the warm run", () => {
  const step = {
    model: MINILM,
    variant: "int4",
    form: null,
    record: MINILM.variants.int4,
    runtime: "wasm",
    key: "wasm",
  };
  const context = { fileUrl: (f) => `https://s/${f}`, cached: new Set() };
  recordMeasured("sha-int4", "wasm", { warmMs: 158, createMs: 120 });
  recordDownload("https://s/artifacts/other.onnx", 1e6, 100); // 10 kB per ms
  const c = cost(step, DEVICE, { ...context, expectedRuns: 10 });
  assert.equal(c.downloadMs, FILES.int4.bytes / 1e4);
  assert.equal(c.ms, FILES.int4.bytes / 1e4 + 120 + 10 * 158);
  assert.equal(cost(step, DEVICE, context).ms, FILES.int4.bytes / 1e4 + 120 + 1000 * 158, "the default's runs");
});

test("a bad expectedRuns is refused, naming the option, what it takes and what came", () => {
  for (const bad of [0, -3, 2.5, Number.NaN, Number.POSITIVE_INFINITY, "100", true, {}]) {
    const shown = typeof bad === "number" ? String(bad) : JSON.stringify(bad);
    const message = `expectedRuns must be a whole number of 1 or more (the runs the page expects of the model; 1 when a cold start matters most), got ${shown}`;
    assert.throws(() => plan({ expectedRuns: bad }), { message });
    assert.throws(() => expectedRuns(bad), { message });
  }
  assert.equal(expectedRuns(undefined), DEFAULT_EXPECTED_RUNS);
  assert.equal(expectedRuns(1), 1);
  assert.equal(expectedRuns(250000), 250000);
});
