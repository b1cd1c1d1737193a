// web/lib/worker/ort-log.js: which of onnxruntime's stderr lines reach the console, and as what (node --test).
import assert from "node:assert/strict";
import { test } from "node:test";

import { logRouter } from "../../../../web/lib/worker/ort-log.js";

const at = (severity, where, text) => `2026-12-03 23:40:01.123 [${severity}:onnxruntime:, ${where}] ${text}`;
const SHADER = [
  "",
  "enable f16;",
  "@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;",
  "@compute @workgroup_size(64)",
  "fn main(@builtin(global_invocation_id) id: vec3<u32>) {",
  "}",
];

function routed(lines) {
  const route = logRouter();
  return lines.map(([level, text]) => [route(level, text), text]).filter(([to]) => to);
}

test("a verbose record with shader source reaches the console not at all, whatever its length", () => {
  const lines = [
    ["error", at("V", "program_manager.cc:105 Build", "=== WebGPU Shader code [Add] Start ===")],
    ...SHADER.map((line) => ["error", line]),
    ["error", "=== WebGPU Shader code [Add] End ==="],
    ["error", at("I", "session_state.cc:1280 VerifyEachNodeIsAssignedToAnEp", "Node placements")],
  ];
  assert.deepEqual(routed(lines), []);
});

test("an error record is one console error, its following lines are not; a warning stays a warning", () => {
  const failed = at(
    "E",
    "webgpu_context.cc:388 Run",
    "Failed to create a WebGPU compute pipeline: shader Clip is invalid",
  );
  const warned = at(
    "W",
    "session_state.cc:1359 VerifyEachNodeIsAssignedToAnEp",
    "Some nodes were not assigned to the preferred execution providers",
  );
  const lines = [
    ["error", failed],
    ...SHADER.map((line) => ["error", line]),
    ["error", warned],
    ["error", "a second line of the warning"],
  ];
  assert.deepEqual(routed(lines), [
    ["error", failed],
    ["warn", warned],
  ]);
});

test("other code's warnings and errors pass as they are; a warning ends onnxruntime's record", () => {
  const lines = [
    ["error", at("V", "x.cc:1 F", "verbose")],
    ["error", "still the verbose record"],
    ["warn", 'removing requested execution provider "webnn" from session options because it is not available'],
    ["error", "Uncaught TypeError: something of the page's own"],
    ["log", "a log line"],
    ["info", "an info line"],
  ];
  assert.deepEqual(
    routed(lines).map(([to]) => to),
    ["warn", "error"],
  );
});
