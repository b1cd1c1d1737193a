// probe.js on what other engines expose: WebKit's null navigator.gpu, a missing or null navigator.ml, an isolated
// page without SharedArrayBuffer, Firefox's lavapipe adapter with an empty adapter info. The probe reads the
// page's globals, so each test sets them as such a page has them and probes a fresh copy of the module (probe()
// is once per page).
import { test } from "node:test";
import assert from "node:assert/strict";

import { browserName, softwareAdapter, threadCeiling, threadsFor } from "../../../../web/lib/choice/probe.js";

const WEBKIT = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15";
const FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0";
let copies = 0;

// The probe of a page whose navigator is `nav`, isolated or not, with or without SharedArrayBuffer.
async function probeOn(nav, { isolated = true, sharedArrayBuffer = true } = {}) {
  Object.defineProperty(globalThis, "navigator", {
    value: { hardwareConcurrency: 4, userAgent: WEBKIT, ...nav },
    configurable: true,
  });
  globalThis.self ??= globalThis;
  globalThis.crossOriginIsolated = isolated;
  const saved = globalThis.SharedArrayBuffer;
  if (!sharedArrayBuffer) delete globalThis.SharedArrayBuffer;
  try {
    const { probe } = await import(`../../../../web/lib/choice/probe.js?copy=${copies++}`);
    return await probe();
  } finally {
    globalThis.SharedArrayBuffer = saved;
  }
}

test("an isolated page without SharedArrayBuffer runs one thread, and says why", () => {
  assert.equal(threadsFor({ crossOriginIsolated: true, hardwareConcurrency: 4, sharedMemory: false }), 1);
  assert.equal(threadsFor({ crossOriginIsolated: true, hardwareConcurrency: 4, sharedMemory: true }), 4);
  assert.equal(threadsFor({ crossOriginIsolated: true, hardwareConcurrency: 2 }), 2);
  assert.equal(threadsFor({ crossOriginIsolated: false, hardwareConcurrency: 8, sharedMemory: true }), 1);
  assert.match(
    threadCeiling({ crossOriginIsolated: true, hardwareConcurrency: 4, sharedMemory: false }).why,
    /no SharedArrayBuffer/,
  );
  assert.match(
    threadCeiling({ crossOriginIsolated: false, hardwareConcurrency: 4, sharedMemory: true }).why,
    /not cross-origin isolated/,
  );
  assert.deepEqual(threadCeiling({ crossOriginIsolated: true, hardwareConcurrency: 16, sharedMemory: true }), {
    threads: 4,
    why: "up to 4 threads (the browser reports 16 cores; more gain nothing on these models)",
  });
});

test("WebKit's reported cores are marked overstated (WebKitGTK says 4 on 2 cores); Chromium's and Firefox's are not", () => {
  const isolated = { crossOriginIsolated: true, hardwareConcurrency: 4, sharedMemory: true };
  assert.deepEqual(threadCeiling({ ...isolated, userAgent: WEBKIT }), {
    threads: 4,
    why: "up to 4 threads (the browser reports 4 cores)",
    overstated: "WebKitGTK reports 4 cores, which can be more than the machine has",
  });
  assert.equal(threadCeiling({ ...isolated, userAgent: FIREFOX }).overstated, undefined);
  assert.equal(
    threadCeiling({ ...isolated, userAgent: "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/131.0.0.0 Safari/537.36" })
      .overstated,
    undefined,
  );
});

test("WebKit: navigator.gpu and navigator.ml null, no SharedArrayBuffer: three reasons in words, no error", async () => {
  const device = await probeOn({ gpu: null, ml: null }, { sharedArrayBuffer: false });
  assert.equal(device.webgpu, false);
  assert.equal(device.webgpuReason, "this browser has no WebGPU (navigator.gpu is null)");
  assert.equal(device.webnn, false);
  assert.equal(device.webnnReason, "this browser has no WebNN (navigator.ml is null)");
  assert.equal(device.sharedMemory, false);
  assert.equal(device.crossOriginIsolated, true);
  assert.deepEqual(threadCeiling(device), {
    threads: 1,
    why: "one thread: this browser gives the page no SharedArrayBuffer, which threads need",
  });
});

test("no navigator.gpu or navigator.ml at all is 'missing'; one without its method is no API either", async () => {
  const missing = await probeOn({});
  assert.equal(missing.webgpuReason, "this browser has no WebGPU (navigator.gpu is missing)");
  assert.equal(missing.webnnReason, "this browser has no WebNN (navigator.ml is missing)");
  assert.equal(missing.sharedMemory, true);
  const empty = await probeOn({ gpu: {}, ml: {} });
  assert.equal(empty.webgpuReason, "this browser has no WebGPU (navigator.gpu is missing)");
  assert.equal(empty.webnnReason, "this browser has no WebNN (navigator.ml is missing)");
});

test("no adapter, a refused adapter and a refused WebNN context each say so", async () => {
  const none = await probeOn({ gpu: { requestAdapter: async () => null } });
  assert.equal(none.webgpuReason, "navigator.gpu.requestAdapter() found no adapter");
  const refused = await probeOn({
    gpu: {
      requestAdapter: async () => {
        throw new Error("blocked");
      },
    },
    ml: {
      createContext: async () => {
        throw new Error("no NPU");
      },
    },
  });
  assert.equal(refused.webgpuReason, "requestAdapter() failed: blocked");
  assert.equal(refused.webnnReason, "navigator.ml.createContext() failed: no NPU");
});

test("Firefox's lavapipe: empty adapter info, isFallbackAdapter and shader-f16: a software adapter with a sensible kind", async () => {
  const info = { vendor: "", architecture: "", device: "", description: "", isFallbackAdapter: true };
  const device = await probeOn({
    userAgent: FIREFOX,
    hardwareConcurrency: 2,
    gpu: { requestAdapter: async () => ({ info, features: new Set(["shader-f16"]) }) },
  });
  assert.equal(device.webgpu, true);
  assert.equal(device.shaderF16, true);
  assert.deepEqual(device.adapter, { vendor: "", architecture: "", device: "", description: "", fallback: true });
  const { deviceKind, fingerprint } = await import("../../../../web/lib/choice/probe.js");
  assert.equal(deviceKind(device), "Firefox 153 · 2 cores · unnamed WebGPU adapter (software)");
  assert.match(fingerprint(device), /^Mozilla\/5\.0 .*Firefox\/153\.0\|\|\|\|\|true\|false$/);
});

test("a software adapter is known by the flag (on the info or, in older browsers, the adapter) or by its name", () => {
  const named = (fields) => ({ vendor: "", architecture: "", device: "", description: "", ...fields });
  assert.equal(softwareAdapter(named({ vendor: "google", architecture: "swiftshader" }), undefined), true);
  assert.equal(softwareAdapter(named({ vendor: "mesa", device: "llvmpipe (LLVM 15.0.7, 256 bits)" }), undefined), true);
  assert.equal(softwareAdapter(named({ description: "Microsoft Basic Render Driver" }), undefined), true);
  assert.equal(softwareAdapter(named({}), true), true);
  assert.equal(softwareAdapter(named({ vendor: "nvidia", architecture: "ampere" }), false), false);
  assert.equal(softwareAdapter(named({ vendor: "intel", architecture: "gen-12lp" }), undefined), false);
});

test("browserName names the engine: WebKitGTK on desktop Linux, Safari on a Mac or an iPhone", () => {
  assert.equal(browserName(WEBKIT), "WebKitGTK"); // its "Version/60.5" is frozen, not 2.50
  assert.equal(
    browserName(
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    ),
    "Safari 17",
  );
  assert.equal(
    browserName(
      "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    ),
    "Safari 17",
  );
  assert.equal(browserName("Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0"), "Firefox 153");
  assert.equal(
    browserName(
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36",
    ),
    "Chrome 156",
  );
});
