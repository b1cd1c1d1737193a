// The fleet's part in the plan (web/lib/choice/fleet.js): device classes as the server names them, a fleet
// "fail" that demotes a runtime before any download, fleet times in place of priors, and what a report holds.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { buildPlan } = await import("../../../../web/lib/choice/plan.js");
const { classKey, coresBucket, deviceClass, fleetFailure } = await import("../../../../web/lib/choice/fleet.js");
const { recordRun } = await import("../../../../web/lib/remembered/speeds.js");
const { threadChoice } = await import("../../../../web/lib/choice/threads.js");
const { clientToken, reportResult } = await import("../../../../web/lib/client/report.js");

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/fleet_classes.json", import.meta.url), "utf8"));
const CHROME =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";
const WEBKITGTK =
  "Mozilla/5.0 (X11; Ubuntu; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15";
const SWIFTSHADER = { vendor: "Google", architecture: "SwiftShader", device: "", description: "", fallback: true };

function device(extra = {}) {
  return {
    webgpu: true,
    adapter: SWIFTSHADER,
    shaderF16: false,
    webnn: false,
    webnnReason: "none",
    crossOriginIsolated: false,
    hardwareConcurrency: 2,
    wasmSimd: true,
    userAgent: CHROME,
    ...extra,
  };
}

function variant(name, bytes, nativeMs) {
  return {
    status: "ok",
    precision: name === "fp32" ? "fp32" : "int8",
    file: `artifacts/${name}.onnx`,
    sha256: `${name}`.padEnd(64, "0"),
    bytes,
    speed: { native_ms: nativeMs },
  };
}

const MODEL = {
  name: "m",
  task: "embedding",
  variants: { fp32: variant("fp32", 80e6, 10), "int8-dynamic": variant("int8", 20e6, 11) },
};
const SHA = (name) => MODEL.variants[name].sha256;
const CLASS = deviceClass(device());

function times(ms, clients = 9) {
  const t = (median) => ({ median, p10: median, p25: median, p75: median, p90: median, clients });
  return { create_ms: t(ms * 10), first_run_ms: t(ms * 2), warm_run_ms: t(ms) };
}

function group(name, runtime, verdict, extra = {}) {
  return {
    sha256: SHA(name),
    runtime,
    model: "m",
    variant: name,
    form: null,
    class: CLASS,
    class_key: classKey(CLASS),
    clients: 14,
    pass: verdict === "fail" ? 0 : 14,
    fail: verdict === "fail" ? 14 : 0,
    verdict,
    metric: null,
    times: null,
    ...extra,
  };
}

function fleet(groups) {
  return { schema: 1, k: 3, fail_share: 0.667, generated: "2026-12-05T00:00:00Z", reports: 100, groups };
}

function plan(context = {}, dev = device()) {
  return buildPlan(MODEL, dev, {
    fileUrl: (f) => `https://s/${f}`,
    cached: new Set(),
    verify: "first-use",
    ortVersion: "1.30.0",
    ...context,
  });
}

beforeEach(() => storage.clear());

test("core buckets and class keys are the server's (tests/vectors/fleet_classes.json)", () => {
  for (const [cores, bucket] of VECTORS.cores) assert.equal(coresBucket(cores), bucket, `${cores} cores`);
  for (const [cls, key] of VECTORS.keys) assert.equal(classKey(cls), key);
});

test("a device's class: engine and major version, adapter vendor and architecture lower-cased, a core bucket", () => {
  assert.deepEqual(CLASS, {
    engine: "Chrome",
    engine_major: 131,
    adapter_vendor: "google",
    adapter_architecture: "swiftshader",
    software_adapter: true,
    cores: "2",
  });
  assert.deepEqual(
    deviceClass(device({ userAgent: WEBKITGTK, adapter: null, webgpu: false, hardwareConcurrency: 4 })),
    {
      engine: "WebKitGTK",
      engine_major: null,
      adapter_vendor: "none",
      adapter_architecture: "",
      software_adapter: false,
      cores: "3-4",
    },
  );
});

test("a runtime the fleet failed on this class is left out before any download, with the count", () => {
  const failing = fleet([group("fp32", "wasm-1t", "fail", { metric: { name: "cosine_min", median: 0.42 } })]);
  const { steps, skipped } = plan({ fleet: failing });
  assert.ok(
    !steps.some((s) => s.variant === "fp32" && s.key === "wasm-1t"),
    JSON.stringify(steps.map((s) => [s.key, s.variant])),
  );
  const why = skipped.find((s) => s.variant === "fp32" && s.runtime === "wasm").reason;
  assert.equal(
    why,
    "failed verification on 14 of 14 devices of this class (the fleet's reports; median cosine_min 0.420)",
  );
});

test("another class's failures, a 'mixed' or 'few' group and an unknown schema change nothing", () => {
  const other = { ...CLASS, cores: "5-8" };
  const cases = [
    fleet([group("fp32", "wasm-1t", "fail", { class: other })]),
    fleet([group("fp32", "wasm-1t", "mixed")]),
    fleet([group("fp32", "wasm-1t", "few")]),
    { ...fleet([group("fp32", "wasm-1t", "fail")]), schema: 2 },
  ];
  const base = plan().steps.map((s) => `${s.key}/${s.variant}`);
  for (const document of cases) {
    assert.deepEqual(
      plan({ fleet: document }).steps.map((s) => `${s.key}/${s.variant}`),
      base,
    );
    assert.equal(fleetFailure(document, SHA("fp32"), "wasm-1t", device()), null);
  }
});

test("the fleet's times rank the steps in place of priors, and the plan names them as its source", () => {
  // Priors put int8 (11 ms native) near fp32 (10 ms); the fleet measured int8 at 1 ms and fp32 at 30 ms here.
  const measured = fleet([
    group("fp32", "wasm-1t", "pass", { times: times(30) }),
    group("int8-dynamic", "wasm-1t", "pass", { times: times(1) }),
  ]);
  const { steps } = plan({
    fleet: measured,
    cached: new Set(Object.values(MODEL.variants).map((v) => `https://s/${v.file}`)),
  });
  const [first] = steps;
  assert.equal(first.variant, "int8-dynamic");
  assert.equal(first.runMs, 1);
  assert.match(first.why, /1\.0 ms per run \(the fleet: median of 9 devices of this class\)/);
  const fp32 = steps.find((s) => s.variant === "fp32" && s.key === "wasm-1t");
  assert.match(fp32.why, /30 ms per run \(the fleet/);
});

test("this browser's own measurement outranks the fleet's", () => {
  recordRun(SHA("fp32"), "wasm-1t", 2, false);
  const step = plan({ fleet: fleet([group("fp32", "wasm-1t", "pass", { times: times(30) })]) }).steps.find(
    (s) => s.variant === "fp32" && s.key === "wasm-1t",
  );
  assert.equal(step.runMs, 2);
  assert.match(step.why, /measured in this browser/);
});

test("the fleet's medians of both thread counts decide the threads without a trial here", () => {
  const isolated = device({ crossOriginIsolated: true });
  const medians = fleet([
    group("fp32", "wasm", "pass", { times: times(4) }),
    group("fp32", "wasm-1t", "pass", { times: times(10) }),
  ]);
  const choice = threadChoice("wasm", MODEL.variants.fp32, isolated, { fleet: medians });
  assert.equal(choice.threads, 2);
  assert.equal(choice.trial, null);
  assert.match(choice.why, /the fleet's medians on this device class/);
  assert.notEqual(
    threadChoice("wasm", MODEL.variants.fp32, isolated, {}).trial,
    null,
    "without the fleet a trial runs",
  );
});

test("a report result holds the listed fields and nothing else", () => {
  const file = { model: "m", variant: "fp32", form: null, sha256: SHA("fp32"), key: "wasm-1t", threads: 1 };
  const verification = {
    metric: { cosine_min: 0.999, cosine_mean: 0.9995 },
    budget: { cosine_min: 0.99 },
    max_abs: 1e-3,
    outputs: { secret: [1, 2] },
  };
  const result = reportResult(file, "pass", verification, { create_ms: 12, first_run_ms: 3, warm_run_ms: 1.5 });
  assert.deepEqual(result, {
    model: "m",
    variant: "fp32",
    form: null,
    sha256: SHA("fp32"),
    runtime: "wasm-1t",
    threads: 1,
    verdict: "pass",
    metric: { name: "cosine_min", value: 0.999, limit: 0.99 },
    create_ms: 12,
    first_run_ms: 3,
    warm_run_ms: 1.5,
  });
  const failed = reportResult(file, "fail", null, { create_ms: Number.NaN });
  assert.equal(failed.metric, null);
  assert.equal(failed.create_ms, null);
  assert.equal(reportResult(file, "fail", { metric: {}, max_abs: 2 }, {}).metric.name, "max_abs");
});

test("the client token is random, base64url, and kept", () => {
  const token = clientToken();
  assert.match(token, /^[A-Za-z0-9_-]{22}$/);
  assert.equal(clientToken(), token);
  storage.clear();
  assert.notEqual(clientToken(), token);
});

test("one thread failed by the fleet, the page's threads not: they are taken without a trial", () => {
  const isolated = device({ crossOriginIsolated: true });
  const split = fleet([group("fp32", "wasm-1t", "fail"), group("fp32", "wasm", "pass")]);
  const choice = threadChoice("wasm", MODEL.variants.fp32, isolated, { fleet: split });
  assert.deepEqual([choice.key, choice.threads, choice.trial], ["wasm", 2, null]);
  assert.match(choice.why, /^2 threads: on one thread, failed verification on 14 of 14 devices of this class/);
  const { steps } = plan({ fleet: split }, isolated);
  assert.ok(
    steps.some((s) => s.variant === "fp32" && s.key === "wasm"),
    "fp32 runs on the page's threads",
  );
  assert.ok(!steps.some((s) => s.variant === "fp32" && s.key === "wasm-1t"));
});
