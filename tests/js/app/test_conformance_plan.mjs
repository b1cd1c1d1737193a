// The conformance run's rows (web/app/conformance-plan.js, node --test): on a software WebGPU adapter the GPU
// runtime gets one row per model (fp32 when the adapter runs it, else the smallest variant it runs; a model it runs
// none of keeps one row, skipped with why), every other row is counted as left out; with fullWebgpu, or on a GPU,
// every row is planned.
import assert from "node:assert/strict";
import { test } from "node:test";

import { planJobs } from "../../../web/app/conformance-plan.js";

const SOFTWARE = {
  webgpu: true,
  shaderF16: false,
  adapter: { vendor: "google", architecture: "swiftshader", fallback: true },
};
const GPU = { webgpu: true, shaderF16: true, adapter: { vendor: "nvidia", architecture: "ampere", fallback: false } };
const basic = { status: "ok", runtimes: null, file: "b.onnx", sha256: "b" };

function variant(bytes, precision, forms = {}) {
  return { status: "ok", bytes, precision, arithmetic: precision, file: `${bytes}.onnx`, sha256: String(bytes), forms };
}

const built = {
  models: {
    a: {
      name: "a",
      variants: {
        fp32: variant(4000, "fp32", { basic }),
        fp16: variant(2000, "fp16"),
        int8: variant(1000, "int8", { basic }),
      },
    },
    // No fp32 served: the smallest variant this adapter runs (fp16 needs shader-f16, which SwiftShader lacks).
    b: {
      name: "b",
      variants: {
        fp32: { status: "skipped" },
        fp16: variant(500, "fp16"),
        "int8-dynamic": variant(900, "int8"),
        int4: variant(700, "int8"),
      },
    },
    c: { name: "c", variants: { fp16: variant(500, "fp16") } },
  },
};
const keys = (jobs) => jobs.map((j) => `${j.model.name} ${j.variant} ${j.form ?? "-"} ${j.runtime}`);

test("a software adapter: one webgpu row per model, the rest counted as left out", () => {
  const { jobs, webgpu } = planJobs(built, ["a", "b", "c"], ["wasm", "webgpu"], SOFTWARE);
  assert.deepEqual(
    keys(jobs).filter((k) => k.endsWith("webgpu")),
    ["a fp32 - webgpu", "b int4 - webgpu", "c fp16 - webgpu"],
  );
  assert.deepEqual(webgpu, {
    scope: "one per model",
    adapter: "swiftshader",
    chosen: { a: "fp32", b: "int4", c: "fp16" },
    left_out: 6,
  });
  assert.equal(keys(jobs).filter((k) => k.endsWith(" wasm")).length, 9); // WebAssembly's rows are all there
});

test("fullWebgpu, or a real GPU: every row", () => {
  for (const [device, options] of [
    [SOFTWARE, { fullWebgpu: true }],
    [GPU, {}],
  ]) {
    const { jobs, webgpu } = planJobs(built, ["a", "b", "c"], ["webgpu"], device, options);
    assert.equal(jobs.length, 9);
    assert.deepEqual(webgpu, { scope: "full" });
  }
});

test("an unknown model is an error naming the models", () => {
  assert.throws(() => planJobs(built, ["z"], ["wasm"], SOFTWARE), /no model "z" in the manifest; models: a, b, c/);
});
