// web/lib/choice/placement.js: where onnxruntime-web ran each node, from its verbose session log.
import assert from "node:assert/strict";
import { test } from "node:test";

import { placement } from "../../../../web/lib/choice/placement.js";

// The shape of onnxruntime's VerifyEachNodeIsAssignedToAnEp lines, as the browser console shows them.
const V = "[V:onnxruntime:, session_state.cc:1345 VerifyEachNodeIsAssignedToAnEp]";
const header = (ep, n) => `${V}  Node(s) placed on [${ep}]. Number of nodes: ${n}`;
const node = (op, name) => `${V}   ${op} (${name})`;

test("nodes split between WebGPU and the CPU: counts, fallback op types, copies left out", () => {
  const logs = [
    "[I:onnxruntime:, transformer_memcpy.cc:393 AddCopyNode] Add MemcpyFromHost after /1/PRelu for WebGpuExecutionProvider",
    "[V:onnxruntime:, session_state.cc:1280 VerifyEachNodeIsAssignedToAnEp] Node placements",
    header("WebGpuExecutionProvider", 6),
    node("MatMul", "/MatMul"),
    node("MemcpyFromHost", "Memcpy"),
    header("CPUExecutionProvider", 4),
    node("PRelu", "/1/PRelu"),
    node("Gather", "/Gather"),
    node("Gather", "/Gather_1"),
    node("MemcpyToHost", "Memcpy_token_1"),
    "[W:onnxruntime:, session_state.cc:1359 VerifyEachNodeIsAssignedToAnEp] Some nodes were not assigned to the preferred execution providers which may or may not have an negative impact on performance.",
  ];
  assert.deepEqual(placement(logs), {
    found: true,
    webgpu_nodes: 6,
    cpu_nodes: 3,
    cpu_op_types: { PRelu: 1, Gather: 2 },
    by_provider: { WebGpuExecutionProvider: 6, CPUExecutionProvider: 4 },
  });
});

test("everything on one provider: 'All nodes placed on', no node list", () => {
  const p = placement([`${V} All nodes placed on [WebGpuExecutionProvider]. Number of nodes: 42`]);
  assert.equal(p.found, true);
  assert.equal(p.webgpu_nodes, 42);
  assert.equal(p.cpu_nodes, 0);
  assert.deepEqual(p.cpu_op_types, {});
});

test("the JSEP provider of older onnxruntime-web counts as WebGPU", () => {
  const p = placement([header("JsExecutionProvider", 9), header("CPUExecutionProvider", 1), node("Scan", "")]);
  assert.equal(p.webgpu_nodes, 9);
  assert.deepEqual(p.cpu_op_types, { Scan: 1 });
});

test("nodes listed under a non-CPU provider are not CPU fallbacks", () => {
  const p = placement([header("WebGpuExecutionProvider", 2), node("Conv", "/c"), node("Relu", "/r")]);
  assert.equal(p.cpu_nodes, 0);
  assert.deepEqual(p.cpu_op_types, {});
});

test("node lines before any header are ignored", () => {
  const p = placement([node("Conv", "/c"), header("CPUExecutionProvider", 1), node("Add", "/a")]);
  assert.deepEqual(p.cpu_op_types, { Add: 1 });
});

test("two sessions' logs add up per provider", () => {
  const p = placement([
    header("CPUExecutionProvider", 2),
    header("WebGpuExecutionProvider", 3),
    header("CPUExecutionProvider", 5),
  ]);
  assert.deepEqual(p.by_provider, { CPUExecutionProvider: 7, WebGpuExecutionProvider: 3 });
});

test("no placement lines: found is false and every count is zero", () => {
  for (const logs of [[], ["ort-wasm: simd", `${V} Node placements`]]) {
    assert.deepEqual(placement(logs), {
      found: false,
      webgpu_nodes: 0,
      cpu_nodes: 0,
      cpu_op_types: {},
      by_provider: {},
    });
  }
});

test("a session wholly on the CPU ('All nodes placed on [CPUExecutionProvider]') shows its CPU nodes", () => {
  const p = placement([`${V} All nodes placed on [CPUExecutionProvider]. Number of nodes: 12`]);
  assert.equal(p.by_provider.CPUExecutionProvider, 12);
  assert.equal(p.cpu_nodes, 12);
});
