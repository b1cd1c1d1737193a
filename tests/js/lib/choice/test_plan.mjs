// The plan's ranking rules, on manifests made here (node --test; no browser needed).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { buildPlan } = await import("../../../../web/lib/choice/plan.js");
const { deviceKind } = await import("../../../../web/lib/choice/probe.js");
const { recordDownload, recordRun } = await import("../../../../web/lib/remembered/speeds.js");
const { runtime } = await import("../../../../web/lib/choice/runtimes.js");
const { remember } = await import("../../../../web/lib/choice/artifact-verdicts.js");
const { rememberTrial } = await import("../../../../web/lib/choice/threads.js");
const { ORT_WEB_VERSION } = await import("../../../../web/lib/client/client.js").catch(() => ({}));

const UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";
const SOFTWARE_GPU = { vendor: "google", architecture: "swiftshader", device: "", description: "", fallback: true };
const REAL_GPU = { vendor: "nvidia", architecture: "ampere", device: "", description: "", fallback: false };

function device(adapter, extra = {}) {
  return {
    webgpu: Boolean(adapter),
    adapter,
    shaderF16: false,
    webnn: false,
    webnnReason: "no navigator.ml",
    crossOriginIsolated: true,
    hardwareConcurrency: 2,
    wasmSimd: true,
    userAgent: UA,
    ...extra,
  };
}

function variant(name, precision, bytes, nativeMs) {
  return {
    status: "ok",
    precision,
    file: `artifacts/${name}.onnx`,
    sha256: `sha-${name}`,
    bytes,
    speed: { native_ms: nativeMs },
  };
}

const MODEL = {
  name: "m",
  task: "embedding",
  variants: {
    fp32: variant("fp32", "fp32", 80e6, 10),
    fp16: variant("fp16", "fp16", 40e6, 12),
    "int8-dynamic": variant("int8-dynamic", "int8", 20e6, 11),
  },
};

function plan(dev, extra = {}) {
  return buildPlan(MODEL, dev, {
    fileUrl: (f) => `https://s/${f}`,
    cached: new Set(),
    verify: "first-use",
    ortVersion: "1.30.0",
    ...extra,
  });
}

// Every device here measured its 2 threads faster than one (threads.js): wasm runs as "wasm" (test_threads.mjs
// has the thread choice itself).
beforeEach(() => {
  storage.clear();
  for (const adapter of [null, SOFTWARE_GPU, REAL_GPU])
    rememberTrial(device(adapter), { oneMs: 20, manyMs: 12, model: "other", variant: "fp32", sha256: "sha-other" });
});

test("a software WebGPU adapter ranks after WebAssembly until measured, and says why", () => {
  const { steps } = plan(device(SOFTWARE_GPU));
  const runtimes = steps.map((s) => s.runtime);
  assert.equal(runtimes[0], "wasm");
  assert.ok(runtimes.lastIndexOf("wasm") < runtimes.indexOf("webgpu"), runtimes.join(","));
  assert.match(steps.find((s) => s.runtime === "webgpu").why, /software WebGPU adapter: ranked after WebAssembly/);
});

test("once this browser measured the software adapter faster, it ranks by the measurement", () => {
  const all = [...Object.values(MODEL.variants).map((v) => `https://s/${v.file}`)];
  recordRun("sha-fp32", "webgpu", 1, true);
  const { steps } = plan(device(SOFTWARE_GPU), { cached: new Set(all) });
  assert.deepEqual([steps[0].runtime, steps[0].variant], ["webgpu", "fp32"]);
  assert.match(steps[0].why, /measured in this browser/);
});

test("a real GPU ranks before WebAssembly by the priors", () => {
  const { steps } = plan(device(REAL_GPU));
  assert.equal(steps[0].runtime, "webgpu");
});

test("on a cold start, a 4x smaller variant within budget beats a slightly faster large one", () => {
  const { steps } = plan(device(null));
  assert.equal(steps[0].variant, "int8-dynamic", steps.map((s) => `${s.variant}: ${s.why}`).join("\n"));
  assert.match(
    steps[0].why,
    /19\.1 MB to download, time unknown \(no download from https:\/\/s measured in this browser yet\)/,
  );
  assert.equal(steps[0].expectedMs, null, "no estimate without a measured bandwidth");
});

test("download estimates use the bandwidth measured on this browser's own downloads, never a guess", () => {
  // What a page on localhost showed before: "+ 114785 ms to download 21.9 MB", from Chromium's network estimate.
  globalThis.navigator ??= /** @type {any} */ ({});
  const saved = Object.getOwnPropertyDescriptor(globalThis.navigator, "connection");
  Object.defineProperty(globalThis.navigator, "connection", { value: { downlink: 1.6 }, configurable: true });
  try {
    for (const step of plan(device(null)).steps.filter((s) => s.runtime !== "server")) {
      assert.doesNotMatch(step.why, /ms to download/, step.why);
      assert.match(step.why, /MB to download, time unknown/, step.why);
    }
    recordDownload("https://s/artifacts/fp16.onnx", 40e6, 400); // 100 kB per ms, as localhost gives
    const measured = plan(device(null)).steps.find((s) => s.runtime === "wasm" && s.variant === "int8-dynamic");
    assert.match(
      measured.why,
      /200 ms to download 19\.1 MB \(at 95 MB\/s, measured here on 38\.1 MB from https:\/\/s\)/,
    );
    assert.ok(Math.abs(measured.expectedMs - (1000 * measured.runMs + 200)) < 1e-9, `${measured.expectedMs}`);
  } finally {
    if (saved) Object.defineProperty(globalThis.navigator, "connection", saved);
    else delete globalThis.navigator.connection;
  }
});

test("once everything is cached, the fastest run wins", () => {
  const cached = new Set(Object.values(MODEL.variants).map((v) => `https://s/${v.file}`));
  const { steps } = plan(device(null), { cached });
  assert.equal(steps[0].variant, "fp32");
  assert.match(steps[0].why, /cached/);
  assert.ok(
    Math.abs(steps[0].expectedMs - 1000 * (10 * runtime("wasm").prior.factor + runtime("wasm").prior.overheadMs)) <
      1e-9,
  );
});

test("fp16 on WebGPU needs shader-f16", () => {
  const without = plan(device(REAL_GPU));
  assert.ok(!without.steps.some((s) => s.runtime === "webgpu" && s.variant === "fp16"));
  assert.match(without.skipped.find((s) => s.runtime === "webgpu" && s.variant === "fp16").reason, /shader-f16/);
  const withF16 = plan(device(REAL_GPU, { shaderF16: true }));
  assert.ok(withF16.steps.some((s) => s.runtime === "webgpu" && s.variant === "fp16"));
});

test("a pair this device found wrong is skipped with its reason, unless verification is 'always'", () => {
  const dev = device(REAL_GPU);
  remember("sha-fp32", "webgpu", "1.30.0", dev, {
    ok: false,
    reason: "webgpu gave wrong results (max error 1.5)",
    max_abs: 1.5,
  });
  const { steps, skipped } = plan(dev);
  assert.ok(!steps.some((s) => s.runtime === "webgpu" && s.variant === "fp32"));
  assert.match(
    skipped.find((s) => s.runtime === "webgpu" && s.variant === "fp32").reason,
    /max error 1\.5.*not tried again/,
  );
  assert.ok(plan(dev, { verify: "always" }).steps.some((s) => s.runtime === "webgpu" && s.variant === "fp32"));
  // Another onnxruntime-web release is another runtime: checked afresh.
  assert.ok(plan(dev, { ortVersion: "1.31.0" }).steps.some((s) => s.runtime === "webgpu" && s.variant === "fp32"));
});

test("a pair onnxport check failed on this kind of device is skipped; other kinds are not", () => {
  const dev = device(REAL_GPU);
  const verdict = {
    sha256: "sha-int8-dynamic",
    runtime: "wasm",
    status: "fail",
    reason: "max abs 0.3",
    device_kind: deviceKind(dev),
  };
  const oneThreadToo = { ...verdict, runtime: "wasm-1t" };
  const { steps, skipped } = plan(dev, { conformance: { verdicts: [verdict, oneThreadToo] } });
  assert.ok(!steps.some((s) => s.runtime === "wasm" && s.variant === "int8-dynamic"));
  assert.match(
    skipped.find((s) => s.variant === "int8-dynamic").reason,
    /onnxport check on this kind of device found it wrong: max abs 0\.3/,
  );
  const other = plan(dev, {
    conformance: { verdicts: [{ ...verdict, device_kind: "Firefox 140 · 8 cores · no WebGPU" }] },
  });
  assert.ok(other.steps.some((s) => s.runtime === "wasm" && s.variant === "int8-dynamic"));
});

test("a file wrong on the page's threads and not on one runs on one thread, and says why", () => {
  const dev = device(REAL_GPU);
  const verdict = {
    sha256: "sha-int8-dynamic",
    runtime: "wasm",
    status: "fail",
    reason: "max abs 0.3",
    device_kind: deviceKind(dev),
  };
  const step = plan(dev, { conformance: { verdicts: [verdict] } }).steps.find(
    (s) => s.runtime === "wasm" && s.variant === "int8-dynamic",
  );
  assert.equal(step.key, "wasm-1t");
  assert.equal(step.trial, null, "no trial times a count known wrong");
  assert.match(
    step.why,
    /one thread: on 2 threads, onnxport check on this kind of device found it wrong: max abs 0\.3/,
  );
});

test("pins leave only the pinned runtime and variant; the server is always last otherwise", () => {
  const pinned = plan(device(REAL_GPU), { pin: { runtime: "wasm", variant: "fp16" } });
  assert.deepEqual(
    pinned.steps.map((s) => [s.runtime, s.variant]),
    [["wasm", "fp16"]],
  );
  const auto = plan(device(null));
  assert.equal(auto.steps.at(-1).runtime, "server");
  assert.throws(
    () => plan(device(null), { pin: { variant: "int8-static" } }),
    /"int8-static" of m is not served; served: fp32, fp16, int8-dynamic/,
  );
});

test("WebNN is left out with the probe's reason", () => {
  const { skipped } = plan(device(null));
  assert.equal(skipped.find((s) => s.runtime === "webnn").reason, "no navigator.ml");
});

test("device kinds: headless and headed Chrome of one version are one kind; adapters differ", () => {
  const headed = UA.replace("HeadlessChrome", "Chrome");
  assert.equal(deviceKind(device(SOFTWARE_GPU)), deviceKind(device(SOFTWARE_GPU, { userAgent: headed })));
  assert.notEqual(deviceKind(device(SOFTWARE_GPU)), deviceKind(device(REAL_GPU)));
  assert.match(deviceKind(device(SOFTWARE_GPU)), /^Chrome 131 · 2 cores · google swiftshader \(software\)$/);
});

test("the library's onnxruntime-web version is the one package.json pins", () => {
  const pinned = JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url))).dependencies[
    "onnxruntime-web"
  ];
  assert.equal(ORT_WEB_VERSION, pinned);
});

// A scikit-learn forest as the manifest records it (operator_types), and a CNN beside it.
const FOREST = {
  name: "forest",
  task: "classification",
  variants: {
    fp32: {
      ...variant("forest-fp32", "fp32", 30e3, 0.05),
      operator_types: ["ai.onnx.ml/TreeEnsembleClassifier", "ai.onnx/Cast"],
    },
  },
};

test("a runtime whose bundle has no kernel for one of the variant's operators is left out before any download, with why", () => {
  const dev = device(REAL_GPU, { webnn: true, webnnReason: null });
  const { steps, skipped } = buildPlan(FOREST, dev, {
    fileUrl: (f) => `https://s/${f}`,
    cached: new Set(),
    verify: "first-use",
    ortVersion: "1.30.0",
  });
  assert.deepEqual(
    steps.map((s) => s.runtime),
    ["wasm", "server"],
  );
  for (const runtime of ["webgpu", "webnn"]) {
    assert.equal(
      skipped.find((s) => s.runtime === runtime && s.variant === "fp32").reason,
      "its onnxruntime-web bundle has no kernel for ai.onnx.ml/TreeEnsembleClassifier",
    );
  }
  // Pinned to WebGPU, the plan holds no step that could only fail after a download.
  const pinned = buildPlan(FOREST, dev, {
    pin: { runtime: "webgpu" },
    fileUrl: (f) => `https://s/${f}`,
    cached: new Set(),
    verify: "first-use",
  });
  assert.deepEqual(pinned.steps, []);
  assert.match(
    pinned.skipped.find((s) => s.runtime === "webgpu").reason,
    /no kernel for ai\.onnx\.ml\/TreeEnsembleClassifier/,
  );
});

test("operators the bundles have (and variants without operator_types, from older builds) keep every runtime", () => {
  const cnn = {
    name: "cnn",
    task: "classification",
    variants: {
      fp32: {
        ...variant("cnn", "fp32", 1e6, 1),
        operator_types: ["ai.onnx/Conv", "com.microsoft/DynamicQuantizeLSTM", "ai.onnx/ConvInteger"],
      },
    },
  };
  const dev = device(REAL_GPU);
  assert.ok(plan(dev).steps.some((s) => s.runtime === "webgpu"));
  assert.deepEqual(
    buildPlan(cnn, dev, { fileUrl: (f) => f, cached: new Set() }).steps.map((s) => s.runtime),
    ["webgpu", "wasm", "server"],
  );
});

test("figures from a prior say 'prior', never 'onnxport bench'", () => {
  const { steps } = plan(device(null));
  for (const step of steps.filter((s) => s.runtime !== "server")) {
    assert.match(step.why, /\(prior: native [\d.]+ ms at build time, .*not measured yet\)/);
    assert.doesNotMatch(step.why, /onnxport bench/);
  }
});
