// web/lib/choice/runtimes.js: the one table of runtimes, and the rules read off it (node --test).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  BROWSER,
  CHECKED,
  PINNABLE,
  RUNTIMES,
  browserRuntime,
  cannotRun,
  inBrowser,
  keys,
  placed,
  runtime,
  shaderF16Reason,
  unavailableReason,
} from "../../../../web/lib/choice/runtimes.js";

const ISOLATED = { crossOriginIsolated: true, hardwareConcurrency: 8 };
const PLAIN = { crossOriginIsolated: false, hardwareConcurrency: 8 };

test("one frozen row per runtime, keys unique, in the plan's order", () => {
  assert.ok(Object.isFrozen(RUNTIMES) && RUNTIMES.every(Object.isFrozen));
  assert.deepEqual(keys(), ["webgpu", "webnn", "wasm", "wasm-1t", "server"]);
  assert.equal(new Set(keys()).size, RUNTIMES.length);
  assert.deepEqual(PINNABLE, ["webgpu", "webnn", "wasm", "server"]);
  assert.deepEqual(BROWSER, ["webgpu", "webnn", "wasm", "wasm-1t"]);
  assert.deepEqual(CHECKED, ["wasm", "wasm-1t", "webgpu"]);
});

test("every browser row names a bundle, a kernel row and a prior; the server none", () => {
  for (const key of BROWSER) {
    const row = runtime(key);
    assert.match(row.bundle, /^ort\.[a-z]+\.min\.mjs$/, key);
    assert.ok(BROWSER.includes(row.kernels), key);
    assert.equal(typeof row.prior.factor, "number", key);
    assert.ok(PINNABLE.includes(row.runtime), key);
  }
  assert.equal(runtime("server").provider, null);
  assert.deepEqual(
    PINNABLE.filter((key) => !inBrowser(key)),
    ["server"],
  );
  assert.equal(runtime("nope"), undefined);
});

test("wasm runs as wasm-1t on a page without threads; other runtimes keep their key", () => {
  assert.deepEqual(placed("wasm", ISOLATED), { key: "wasm", threads: 4 });
  assert.deepEqual(placed("wasm", PLAIN), { key: "wasm-1t", threads: 1 });
  assert.deepEqual(placed("wasm", { crossOriginIsolated: true, hardwareConcurrency: 1 }), {
    key: "wasm-1t",
    threads: 1,
  });
  assert.deepEqual(placed("wasm-1t", ISOLATED), { key: "wasm-1t", threads: 1 });
  assert.deepEqual(placed("webgpu", ISOLATED), { key: "webgpu", threads: 1 });
  assert.throws(
    () => placed("server", ISOLATED),
    /unknown browser runtime "server"; runtimes: webgpu, webnn, wasm, wasm-1t/,
  );
  assert.throws(() => browserRuntime("cuda"), /unknown browser runtime "cuda"/);
});

test("a runtime the probe found missing is unavailable, with the probe's reason", () => {
  assert.equal(unavailableReason("webgpu", { webgpu: false, webgpuReason: "no navigator.gpu" }), "no navigator.gpu");
  assert.equal(unavailableReason("webgpu", { webgpu: false }), "no WebGPU adapter");
  assert.equal(unavailableReason("webnn", { webnn: false, webnnReason: null }), "no WebNN context");
  assert.equal(unavailableReason("webgpu", { webgpu: true }), null);
  assert.equal(unavailableReason("wasm", {}), null);
  assert.equal(unavailableReason("server", {}), null);
});

test("outside runtimes.js, web/ spells no runtime name as a string", async () => {
  const { readFileSync, readdirSync } = await import("node:fs");
  const root = new URL("../../../../web/", import.meta.url);
  const files = readdirSync(root, { recursive: true }).filter(
    (f) => f.endsWith(".js") && !f.endsWith("runtimes.js") && !f.startsWith("lib/dist/"),
  ); // dist: runtimes.js bundled
  const quoted = new RegExp(
    `["'\`](${keys()
      .map((k) => k.replace("-", "\\-"))
      .join("|")})["'\`]`,
  );
  const found = files.filter((f) => quoted.test(readFileSync(new URL(f, root), "utf8")));
  assert.deepEqual(found, []);
});

test("fp16 on an adapter without shader-f16 is refused before trying, whether built or computed in fp16", () => {
  const gpu = { webgpu: true, shaderF16: false };
  assert.match(shaderF16Reason("webgpu", { precision: "fp16", arithmetic: "fp16" }, gpu), /shader-f16/);
  assert.match(
    shaderF16Reason("webgpu", { precision: "fp32", arithmetic: "fp16" }, gpu),
    /shader-f16/,
    "an fp16 model imported as fp32",
  );
  assert.equal(shaderF16Reason("webgpu", { precision: "fp16" }, { ...gpu, shaderF16: true }), null);
  assert.equal(shaderF16Reason("wasm", { precision: "fp16" }, gpu), null);
  assert.equal(shaderF16Reason("webgpu", { precision: "int8-dynamic", arithmetic: "int8" }, gpu), null);
  assert.equal(
    cannotRun("webgpu", { precision: "fp16" }, { webgpu: false, webgpuReason: "no navigator.gpu" }),
    "no navigator.gpu",
  );
  assert.match(cannotRun("webgpu", { precision: "fp16" }, gpu), /shader-f16/);
  assert.equal(cannotRun("wasm-1t", { precision: "fp16" }, gpu), null);
});
