// web/lib/pipelines/image.js against Pillow's image steps (server/onnxport/pipelines/image.py) on the same decoded
// pixels (tests/vectors/image_vectors.json, written by tests/vectors/make_image_vectors.py): every corpus image,
// every resize filter, grey and RGB, shrinking and enlarging. They must agree exactly: the library ports Pillow's
// fixed-point convolution, so the pixels' and the tensor's bytes hash alike. (Decoding is the browser's own;
// tests/browser/test_browser_image_pipeline.py compares it in Chromium.)
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { inflateSync } from "node:zlib";

import { pixelsOf, tensorOf } from "../../../../web/lib/pipelines/image.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/image_vectors.json", import.meta.url), "utf8"));
const IMAGES = Object.fromEntries(
  Object.entries(VECTORS.images).map(([name, { width, height, rgba }]) => [
    name,
    { width, height, channels: 4, data: new Uint8Array(inflateSync(Buffer.from(rgba, "base64"))) },
  ]),
);

const sha256 = (view) =>
  createHash("sha256")
    .update(new Uint8Array(view.buffer, view.byteOffset, view.byteLength))
    .digest("hex");

for (const mode of ["L", "RGB", "BGR"]) {
  test(`${mode}: every filter and size gives Pillow's pixels and tensor`, () => {
    const cases = VECTORS.cases.filter((c) => VECTORS.specs[c.spec].mode === mode);
    assert.equal(cases.length, Object.keys(IMAGES).length * 5 * 3 * 2);
    for (const { label, image, spec: index, shape, pixels_sha256, dims, tensor_sha256 } of cases) {
      const spec = VECTORS.specs[index];
      const pixels = pixelsOf(spec, IMAGES[image]);
      assert.deepEqual([pixels.height, pixels.width, pixels.channels], shape, `${label}: shape, Pillow's ${shape}`);
      assert.equal(
        sha256(pixels.data),
        pixels_sha256,
        `${label}: the pixels differ from Pillow's (first values ${Array.from(pixels.data.slice(0, 8))})`,
      );
      const t = tensorOf(spec, pixels);
      assert.deepEqual(t.dims, dims, label);
      assert.equal(sha256(t.data), tensor_sha256, `${label}: the tensor differs from Pillow's pipeline's`);
    }
  });
}
