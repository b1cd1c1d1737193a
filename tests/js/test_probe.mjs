// probe.js on what other engines expose: WebKit's null navigator.gpu, an isolated page without
// SharedArrayBuffer. The probe reads the page's globals, so the test sets them as such a page has them.
import { test } from "node:test";
import assert from "node:assert/strict";

import { threadsFor } from "../../web/lib/probe.js";

test("an isolated page without SharedArrayBuffer runs one thread", () => {
  assert.equal(threadsFor({ crossOriginIsolated: true, hardwareConcurrency: 4, sharedMemory: false }), 1);
  assert.equal(threadsFor({ crossOriginIsolated: true, hardwareConcurrency: 4, sharedMemory: true }), 4);
  assert.equal(threadsFor({ crossOriginIsolated: true, hardwareConcurrency: 2 }), 2);
  assert.equal(threadsFor({ crossOriginIsolated: false, hardwareConcurrency: 8, sharedMemory: true }), 1);
});

test("a navigator.gpu that is null is no WebGPU, said as such", async () => {
  Object.defineProperty(globalThis, "navigator", {
    value: { gpu: null, hardwareConcurrency: 4, userAgent: "Mozilla/5.0 AppleWebKit/605.1.15 Version/18.0" },
    configurable: true,
  });
  globalThis.self ??= globalThis;
  const { probe } = await import("../../web/lib/probe.js");
  const device = await probe();
  assert.equal(device.webgpu, false);
  assert.equal(device.webgpuReason, "this browser has no WebGPU (navigator.gpu is null)");
});
