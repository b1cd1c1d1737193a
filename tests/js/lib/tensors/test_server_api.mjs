// web/lib/tensors/server-api.js: the V2 infer request body and the decoding of its response. The real
// server's answer to these bodies is tested in tests/browser/test_browser_bool.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeInferResponse, inferRequestBody } from "../../../../web/lib/tensors/server-api.js";
import { tensor } from "../../../../web/lib/tensors/tensors.js";

test("bool tensors are sent as JSON true/false, never 0/1", () => {
  const body = JSON.parse(inferRequestBody({ mask: tensor("bool", [2, 2], Uint8Array.of(1, 0, 0, 1)) }));
  assert.deepEqual(body, {
    inputs: [{ name: "mask", shape: [2, 2], datatype: "BOOL", data: [true, false, false, true] }],
  });
});

test("64-bit integers are written exactly, beyond 2^53", () => {
  const big = 2n ** 60n + 1n;
  const text = inferRequestBody({ ids: tensor("int64", [3], BigInt64Array.of(big, -5n, 0n)) });
  assert.match(text, /"data":\[1152921504606846977,-5,0\]/);
  assert.equal(JSON.parse(text).inputs[0].datatype, "INT64");
});

test("floats keep their values, NaN becomes null, and names with quotes stay valid JSON", () => {
  const body = JSON.parse(inferRequestBody({ 'x "1"': tensor("float32", [3], Float32Array.of(0.5, NaN, -2)) }));
  assert.deepEqual(body.inputs[0], { name: 'x "1"', shape: [3], datatype: "FP32", data: [0.5, null, -2] });
});

test("a dtype the JSON protocol cannot carry is refused, naming the input", () => {
  assert.throws(
    () => inferRequestBody({ h: tensor("float16", [1], Uint16Array.of(0)) }),
    /input h: dtype float16 cannot be sent/,
  );
});

test("BOOL outputs decode to 0/1 bytes, INT64 to BigInt, null to NaN", () => {
  const outputs = decodeInferResponse({
    outputs: [
      { name: "b", datatype: "BOOL", shape: [3], data: [true, false, true] },
      { name: "i", datatype: "INT64", shape: [2], data: [7, -1] },
      { name: "f", datatype: "FP32", shape: [2], data: [1.5, null] },
    ],
  });
  assert.deepEqual([outputs.b.type, [...outputs.b.data]], ["bool", [1, 0, 1]]);
  assert.ok(outputs.b.data instanceof Uint8Array);
  assert.deepEqual([...outputs.i.data], [7n, -1n]);
  assert.ok(Number.isNaN(outputs.f.data[1]));
  assert.throws(
    () => decodeInferResponse({ outputs: [{ name: "s", datatype: "BYTES", shape: [1], data: ["a"] }] }),
    /output s: datatype BYTES/,
  );
});
