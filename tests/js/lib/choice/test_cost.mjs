// web/lib/choice/cost.js: the plan's one ranking rule: one bench-row lookup, one cost per step for runtimes,
// variants and forms, and the order of steps (node --test; no browser needed).
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { benchRow, byCost, cost, DEFAULT_EXPECTED_RUNS, MIN_GAIN, prior, startsSooner } = await import(
  "../../../../web/lib/choice/cost.js"
);
const { runtime } = await import("../../../../web/lib/choice/runtimes.js");
const { recordDownload, recordMeasured, recordRun } = await import("../../../../web/lib/remembered/speeds.js");
const { RANK_BYTES_PER_MS } = await import("../../../../web/lib/choice/cost.js");

const UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";
const SOFTWARE_GPU = { vendor: "google", architecture: "swiftshader", device: "", description: "", fallback: true };
const DEVICE = {
  webgpu: false,
  adapter: null,
  shaderF16: false,
  webnn: false,
  crossOriginIsolated: true,
  hardwareConcurrency: 2,
  userAgent: UA,
};
const SOFTWARE = { ...DEVICE, webgpu: true, adapter: SOFTWARE_GPU };
const OTHER_KIND = { ...DEVICE, hardwareConcurrency: 8 };

const MODEL = { name: "m" };
const RECORD = { file: "artifacts/a.onnx", sha256: "sha-a", bytes: 1.25e6, speed: { native_ms: 10 } };
const step = (extra = {}) => ({
  model: MODEL,
  variant: "fp32",
  form: null,
  record: RECORD,
  runtime: "wasm",
  key: "wasm",
  ...extra,
});
const NOT_CACHED = { cached: new Set(), fileUrl: (f) => `https://s/${f}` };

function row(extra = {}) {
  return {
    model: "m",
    variant: "fp32",
    form: null,
    runtime: "wasm",
    status: "ok",
    sha256: "sha-a",
    bytes: 1.25e6,
    cached: { create_ms: 50, first_run_ms: 20, total_ms: 300 },
    warm: { median_ms: 7 },
    ...extra,
  };
}
const bench = (rows, device = DEVICE) => ({ browser: { device, results: rows } });

beforeEach(() => storage.clear());

test("one bench-row lookup: the file's row on the runtime key, from a device of this kind only", () => {
  const ok = row();
  assert.equal(benchRow(bench([row({ runtime: "wasm-1t" }), ok]), DEVICE, step()), ok);
  assert.equal(benchRow(bench([ok], OTHER_KIND), DEVICE, step()), null);
  assert.equal(benchRow(bench([row({ status: "error" })]), DEVICE, step()), null);
  assert.equal(benchRow(bench([row({ sha256: "sha-other" })]), DEVICE, step()), null, "another file, however named");
  assert.equal(benchRow(null, DEVICE, step()), null);
});

test("a bench of several engines: the row measured in an engine of this kind", () => {
  const FIREFOX = { ...DEVICE, userAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0" };
  const inChromium = row({ warm: { median_ms: 7 } }),
    inFirefox = row({ warm: { median_ms: 9 } });
  const sections = {
    chromium: { device: DEVICE, results: [inChromium] },
    firefox: { device: FIREFOX, results: [inFirefox] },
  };
  const several = { browser: sections.chromium, browsers: sections };
  assert.equal(benchRow(several, FIREFOX, step()), inFirefox);
  assert.equal(benchRow(several, DEVICE, step()), inChromium);
  assert.equal(benchRow(bench([inChromium]), FIREFOX, step()), null, "Chromium's figures do not speak for Firefox");
});

test("a row from before sha256 names its file by model, variant, form and bytes", () => {
  const old = row({ sha256: undefined });
  assert.equal(benchRow(bench([old]), DEVICE, step()), old);
  assert.equal(benchRow(bench([old]), DEVICE, step({ form: "ort" })), null);
  assert.equal(benchRow(bench([old]), DEVICE, step({ record: { ...RECORD, bytes: 1 } })), null);
});

test("nothing measured: the runtime's prior times native; the download's time is unknown, its bytes still weigh", () => {
  const c = cost(step(), DEVICE, NOT_CACHED);
  const { factor, overheadMs } = runtime("wasm").prior;
  assert.equal(c.run.ms, 10 * factor + overheadMs);
  assert.match(c.run.source, /^prior: native 10 ms at build time/);
  assert.equal(c.run.measured, false);
  assert.equal(c.downloadMs, null, "no bandwidth measured here: no download time");
  assert.equal(c.net.source, "no download from https://s measured in this browser yet");
  assert.equal(c.ms, 1.25e6 / RANK_BYTES_PER_MS + DEFAULT_EXPECTED_RUNS * c.run.ms, "the order still weighs the bytes");
  assert.equal(c.start, null, "a start is never guessed");
  assert.equal(cost(step(), DEVICE, { ...NOT_CACHED, cached: new Set(["https://s/artifacts/a.onnx"]) }).downloadMs, 0);
});

test("a download measured from the file's origin gives its time; another origin's does not", () => {
  recordDownload("https://other.example/repository/x.onnx", 4e6, 10);
  assert.equal(cost(step(), DEVICE, NOT_CACHED).downloadMs, null, "a CDN's bandwidth says nothing of this server's");
  recordDownload("https://s/repository/artifacts/b.onnx", 2.5e6, 50); // 50 kB/ms
  const c = cost(step(), DEVICE, NOT_CACHED);
  assert.equal(c.downloadMs, 25);
  assert.equal(c.ms, 25 + DEFAULT_EXPECTED_RUNS * c.run.ms);
  assert.match(c.net.source, /^48 MB\/s, measured here on 2\.4 MB from https:\/\/s$/);
  recordDownload("https://s/repository/artifacts/small.onnx", 100e3, 1000); // latency, not bandwidth
  assert.equal(cost(step(), DEVICE, NOT_CACHED).downloadMs, 25, "a small file's download is not a measurement");
});

test("the bench's row gives both sums: the warm run, and creation + first run + warm run", () => {
  const c = cost(step(), DEVICE, { ...NOT_CACHED, bench: bench([row()]) });
  assert.deepEqual([c.run.ms, c.run.source, c.run.measured], [7, "onnxport bench on this kind of device", true]);
  assert.deepEqual(c.start, { ms: 77, source: "onnxport bench on this kind of device" });
});

test("this browser's own measurements come before the bench's", () => {
  recordRun("sha-a", "wasm", 3, false);
  const warmOnly = cost(step(), DEVICE, { ...NOT_CACHED, bench: bench([row()]) });
  assert.deepEqual([warmOnly.run.ms, warmOnly.run.source], [3, "measured in this browser"]);
  assert.equal(warmOnly.start.source, "onnxport bench on this kind of device", "a start needs creation measured too");
  recordMeasured("sha-a", "wasm", { warmMs: 4, createMs: 30 });
  assert.deepEqual(cost(step(), DEVICE, { ...NOT_CACHED, bench: bench([row()]) }).start, {
    ms: 34,
    source: "measured in this browser",
  });
});

test("a software adapter: its own prior, and late until measured", () => {
  const gpu = step({ runtime: "webgpu", key: "webgpu" });
  assert.equal(prior("webgpu", SOFTWARE), runtime("webgpu").software.prior);
  assert.equal(prior("webgpu", { ...SOFTWARE, adapter: null }), runtime("webgpu").prior);
  assert.equal(prior("wasm", SOFTWARE), runtime("wasm").prior);
  const guessed = cost(gpu, SOFTWARE, NOT_CACHED);
  assert.equal(guessed.late, true);
  assert.equal(
    guessed.run.ms,
    10 * runtime("webgpu").software.prior.factor + runtime("webgpu").software.prior.overheadMs,
  );
  assert.equal(cost(step(), SOFTWARE, NOT_CACHED).late, false, "WebAssembly on the same device is not late");
  recordRun("sha-a", "webgpu", 1, true);
  assert.equal(cost(gpu, SOFTWARE, NOT_CACHED).late, false, "measured: ranked by the measurement");
});

test("steps: late ones last, then by expected time", () => {
  const steps = [
    { n: 1, late: true, rankMs: 1 },
    { n: 2, late: false, rankMs: 9 },
    { n: 3, late: false, rankMs: 2 },
  ];
  assert.deepEqual(
    steps.sort(byCost).map((s) => s.n),
    [3, 2, 1],
  );
});

test("a file starts sooner only when measured alike and more than 10% faster", () => {
  const asBuilt = { ms: 100, source: "onnxport bench on this kind of device" };
  assert.equal(MIN_GAIN, 0.9);
  assert.equal(startsSooner({ ms: 89, source: asBuilt.source }, asBuilt), true);
  assert.equal(startsSooner({ ms: 91, source: asBuilt.source }, asBuilt), false);
  assert.equal(startsSooner({ ms: 10, source: "measured in this browser" }, asBuilt), false);
  assert.equal(startsSooner(null, asBuilt), false);
  assert.equal(startsSooner({ ms: 10, source: asBuilt.source }, null), false);
});
