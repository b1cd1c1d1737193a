// The app's pieces that decide what a page says (node --test): nodes() drops what a helper had nothing to show
// for (printed as "null" before), the tabular widget's names come from the model's own input unless it names a
// dataset the page knows, and a file that is no image is said with its name, what was expected and what came.
import assert from "node:assert/strict";
import { test } from "node:test";

import { imageFormat, unreadableImageMessage } from "../../../web/app/playground/image-file.js";
import { tabularNames, tabularShape } from "../../../web/app/playground/tabular.js";
import { nodes } from "../../../web/app/ui.js";

const EXPECTED = "expected a PNG, JPEG, WebP, GIF or BMP image";
const ascii = (text) => Uint8Array.from(text, (c) => c.charCodeAt(0));

test("nodes() flattens and drops null, undefined and false, and keeps text and zero-like text", () => {
  assert.deepEqual(nodes("a", null, [undefined, ["b", false]], "", "0"), ["a", "b", "", "0"]);
});

test("a tabular model's fields are named from its own input; only a known dataset names them otherwise", () => {
  const template = {
    name: "example",
    facts: {},
    inputs: [{ name: "features", dtype: "float32", shape: ["batch", 4] }],
  };
  assert.deepEqual(tabularShape(template).width, 4);
  assert.deepEqual(tabularNames(template, 4), {
    columns: ["features[0]", "features[1]", "features[2]", "features[3]"],
    unit: null,
    classes: null,
  });
  const iris = { ...template, name: "iris", facts: { dataset: "sklearn.datasets.load_iris" } };
  assert.deepEqual(tabularNames(iris, 4).columns, ["sepal length", "sepal width", "petal length", "petal width"]);
  assert.deepEqual(tabularNames(iris, 4).classes, ["setosa", "versicolor", "virginica"]);
  // The dataset's names only when its columns fit the input.
  assert.deepEqual(tabularNames({ ...iris, inputs: [{ name: "x", dtype: "float32", shape: [1, 3] }] }, 3).columns, [
    "x[0]",
    "x[1]",
    "x[2]",
  ]);
  // Class labels the model's own pipeline declares.
  const labelled = {
    ...template,
    pipeline: { answer: { output: "p", steps: [{ op: "top_k", labels: ["no", "yes"] }] } },
  };
  assert.deepEqual(tabularNames(labelled, 4).classes, ["no", "yes"]);
});

test("a model whose input is not one row of numbers gets no tabular widget", () => {
  for (const inputs of [
    [{ name: "ids", dtype: "int64", shape: ["batch", 4] }],
    [{ name: "x", dtype: "float32", shape: ["batch", "width"] }],
    [{ name: "x", dtype: "float32", shape: ["batch", 1, 8, 8] }],
    [
      { name: "x", dtype: "float32", shape: ["batch", 4] },
      { name: "y", dtype: "float32", shape: ["batch", 4] },
    ],
    [{ name: "x", dtype: "float32", shape: ["batch", 1000] }],
  ])
    assert.equal(tabularShape({ name: "m", inputs }), null, JSON.stringify(inputs));
});

test("a file that is no image names itself, what was expected and what came", () => {
  const png = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0);
  assert.equal(imageFormat(png), "PNG");
  assert.equal(imageFormat(ascii("RIFF\0\0\0\0WEBP")), "WebP");
  assert.equal(imageFormat(ascii("RIFF\0\0\0\0WAVE")), null);
  assert.equal(
    unreadableImageMessage("digits.png", 1024, png),
    `digits.png: a PNG file (1.0 KB) that does not decode: damaged or cut short; ${EXPECTED}`,
  );
  assert.equal(
    unreadableImageMessage("notes.png", 31, ascii("these are my")),
    `notes.png: ${EXPECTED}, got 31 B starting "these are my"`,
  );
  assert.equal(
    unreadableImageMessage("x.jpg", 300, Uint8Array.of(0, 1, 0xfe)),
    `x.jpg: ${EXPECTED}, got 300 B starting 00 01 fe`,
  );
  assert.equal(unreadableImageMessage("empty.jpg", 0, new Uint8Array()), `empty.jpg: ${EXPECTED}, got an empty file`);
});
