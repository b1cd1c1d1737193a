// web/lib/files/downloads.js over a real HTTP server (node:http on a free port): a download is timed, sha256-checked,
// and its bandwidth remembered for its origin, which the plan's estimates then use (node --test; no browser:
// node has fetch and SubtleCrypto, not the Cache API, so every load downloads).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { after, before, beforeEach, test } from "node:test";

import { storage } from "../../helpers/memory-storage.mjs";

const { loadArtifact } = await import("../../../../web/lib/files/downloads.js");
const { bandwidth, MIN_MEASURED_BYTES } = await import("../../../../web/lib/remembered/speeds.js");

const BIG = new Uint8Array(4 * 1024 * 1024).map((_, i) => (i * 7919) % 251);
const SMALL = BIG.subarray(0, 1000);
const record = (file, bytes) => ({
  file,
  bytes: bytes.byteLength,
  sha256: createHash("sha256").update(bytes).digest("hex"),
});

let server;
let base;
before(async () => {
  server = createServer((request, response) => {
    const body = request.url.endsWith("big.onnx") ? BIG : SMALL;
    response.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": body.byteLength });
    response.end(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}/repository/`;
});
after(() => server.close());
beforeEach(() => storage.clear());

test("a model file's download is timed and its bandwidth remembered for the server's origin", async () => {
  assert.equal(bandwidth(`${base}artifacts/big.onnx`).bytesPerMs, null, "nothing measured yet");
  const loaded = await loadArtifact(`${base}artifacts/big.onnx`, record("artifacts/big.onnx", BIG));
  assert.equal(loaded.source, "network");
  assert.equal(loaded.bytes.byteLength, BIG.byteLength);
  const measured = bandwidth(`${base}artifacts/another.onnx`);
  const expected = BIG.byteLength / loaded.networkMs;
  console.log(`4 MiB over localhost in ${loaded.networkMs.toFixed(1)} ms: ${measured.source}`);
  assert.ok(Math.abs(measured.bytesPerMs - expected) <= expected * 1e-9, `${measured.bytesPerMs} vs ${expected}`);
  assert.match(
    measured.source,
    new RegExp(`measured here on 4\\.0 MB from http://127\\.0\\.0\\.1:${server.address().port}$`),
  );
  assert.equal(
    bandwidth("https://cdn.example/repository/artifacts/big.onnx").bytesPerMs,
    null,
    "another origin is not measured",
  );
});

test("a small file measures latency, not bandwidth: nothing is remembered", async () => {
  assert.ok(SMALL.byteLength < MIN_MEASURED_BYTES);
  await loadArtifact(`${base}artifacts/small.onnx`, record("artifacts/small.onnx", SMALL));
  assert.equal(bandwidth(`${base}artifacts/small.onnx`).bytesPerMs, null);
});
