// The playground's own-data path (web/app/playground/user-data.js) and its outputs' reading
// (outputs.js): each mistake names the input, what the model expects and what came.
import assert from "node:assert/strict";
import { test } from "node:test";

import { reading, firstValues } from "../../../web/app/playground/outputs.js";
import { checkFeeds, feedsFromFile, feedsFromJson, UserDataError } from "../../../web/app/playground/user-data.js";
import { tensor } from "../../../web/lib/tensors/tensors.js";

const MODEL = {
  name: "m",
  inputs: [
    { name: "ids", dtype: "int64", shape: ["batch", "sequence"] },
    { name: "mask", dtype: "bool", shape: ["batch", "sequence"] },
    { name: "scale", dtype: "float32", shape: [1, 3] },
  ],
};
const ONE = { name: "one", inputs: [{ name: "x", dtype: "float32", shape: [-1, 4] }] };

test("nested arrays and {dims, data} both give tensors of the input's dtype", () => {
  const feeds = feedsFromJson(
    JSON.stringify({
      ids: [[101, "9007199254740993"]],
      mask: { dims: [1, 2], data: [true, 0] },
      scale: [[0.5, 1, 2]],
    }),
    MODEL,
  );
  assert.deepEqual([feeds.ids.type, feeds.ids.dims, [...feeds.ids.data]], ["int64", [1, 2], [101n, 9007199254740993n]]);
  assert.deepEqual([feeds.mask.type, [...feeds.mask.data]], ["bool", [1, 0]]);
  assert.deepEqual(
    [feeds.scale.dims, [...feeds.scale.data]],
    [
      [1, 3],
      [0.5, 1, 2],
    ],
  );
  // One input: the bare array is enough.
  assert.deepEqual(feedsFromJson("[[1, 2, 3, 4], [5, 6, 7, 8]]", ONE).x.dims, [2, 4]);
});

test("each mistake names the input, what the model expects and what came", () => {
  const bad = (body, pattern) =>
    assert.throws(
      () => feedsFromJson(JSON.stringify(body), MODEL),
      (e) => e instanceof UserDataError && pattern.test(e.message),
      pattern.source,
    );
  const ok = { ids: [[1, 2]], mask: [[true, true]], scale: [[1, 2, 3]] };
  bad({ ...ok, extra: [1] }, /the pasted JSON: "extra" is not an input of m; its inputs: ids, mask, scale/);
  bad({ ids: ok.ids, mask: ok.mask }, /no value for input "scale" of m/);
  bad({ ...ok, scale: [[1, 2]] }, /input "scale": dimension 1 must be 3 \(shape \[1, 3\]\), got 2: \[1, 2\]/);
  bad({ ...ok, scale: [1, 2, 3] }, /input "scale": expected 2 dimensions \[1, 3\], got 1: \[3\]/);
  bad(
    { ...ok, mask: [[true, true, false]] },
    /input "mask": dimension 1 \(sequence\) is 3, but sequence is 2 in input "ids"/,
  );
  bad({ ...ok, mask: [["yes", true]] }, /input "mask": element 0 is "yes"; a bool input takes true\/false/);
  bad({ ...ok, ids: [[1.5, 2]] }, /input "ids": element 0 is 1\.5; an int64 input takes integers/);
  bad({ ...ok, scale: [[1, 2], [3]] }, /input "scale": ragged nesting at \[1\]: expected a list of 2, got a list of 1/);
  bad({ ...ok, scale: { dims: [1, 3], data: [1, 2] } }, /dims \[1, 3\] hold 3 values, data has 2/);
  assert.throws(() => feedsFromJson("{nope", MODEL), /the pasted JSON is not JSON/);
});

test("arrays from files must have the input's dtype: nothing is cast silently", () => {
  assert.throws(
    () => checkFeeds({ x: tensor("float64", [1, 4], new Float64Array(4)) }, ONE, "x.npy"),
    /x\.npy: input "x": expected dtype float32, got float64 \(save it with \.astype\(np\.float32\)\)/,
  );
});

test("an .npy for a model with several inputs, or another file kind, is refused with what to give", async () => {
  await assert.rejects(
    feedsFromFile("a.npy", new Uint8Array(16), MODEL),
    /a\.npy: m has 3 inputs \(ids, mask, scale\): give an \.npz with one key per input/,
  );
  await assert.rejects(feedsFromFile("a.csv", new Uint8Array(16), MODEL), /a\.csv: expected an \.npy or \.npz file/);
});

test("outputs: top-k for classification, per-step argmax for sequences, nothing otherwise", () => {
  const logits = tensor("float32", [2, 4], Float32Array.of(0.1, 3, -1, 2, 0, 0, 0, 9));
  assert.equal(
    reading({ task: "classification", metric_output: "logits" }, "logits", logits),
    "top 3 of row 0: class 1 (3), class 3 (2), class 0 (0.10000)",
  );
  assert.equal(reading({ task: "classification", metric_output: "logits" }, "other", logits), "");
  const steps = tensor("float32", [3, 1, 3], Float32Array.of(0, 1, 0, 5, 0, 0, 0, 0, 2));
  assert.equal(
    reading({ task: "sequence", metric_output: null }, "y", steps),
    "argmax over 3 classes at each of 3 steps: 1 0 2",
  );
  assert.equal(reading({ task: "embedding", metric_output: "e" }, "e", logits), "");
  assert.equal(firstValues(tensor("bool", [3], Uint8Array.of(1, 0, 1)), 2), "true, false, … (3 values)");
  assert.equal(firstValues(tensor("int64", [2], BigInt64Array.of(7n, -1n))), "7, -1");
});
