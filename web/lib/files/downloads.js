// Artifact downloads: streamed with progress, sha256-verified before use, kept in the
// Cache API under their hashed URL so a later visit needs no model bytes from the network.
//
// Hashed once: an entry is written only after its bytes matched the manifest's sha256, under a
// URL named by that sha256, so a cache hit is trusted (docs/guide/browser-library.md: threat model). A hit still gets a
// cheap check against damage (a cut-short or altered entry): its length, and the sha256 of a
// sample of its bytes recorded when it was stored, instead of re-hashing tens of megabytes.
// Each network download is timed, and its bandwidth remembered for its origin: the plan's download
// estimates use that figure and no other (speeds.js). Reference files take the same fetch and the same
// sha256 check (fetchVerified), without the Cache API.
import { recordDownload } from "../remembered/speeds.js";
import { decodeTensors } from "../tensors/tensors.js";
import { fetchFailed } from "./cors.js";

const CACHE = "onnxport-artifacts-v2";
const OLD_CACHES = ["onnxport-artifacts-v1"]; // entries without a sample hash: dropped, not re-hashed
const SAMPLE_HEADER = "X-Onnxport-Sample-Sha256";
const SAMPLE_SLICES = 64; // 64 slices of 1 KiB, evenly spaced, the first and the last included
const SLICE = 1024;

export class IntegrityError extends Error {}

// record: {file, sha256, bytes} from the manifest; url: where that file is served.
/**
 * @param {string} url
 * @param {import("./manifest.js").FileRecord} record
 * @param {(received: number, total: number, source: string) => void} [onProgress]
 */
export async function loadArtifact(url, record, onProgress = () => {}) {
  const notes = [];
  let cache = null;
  try {
    cache = await caches.open(CACHE);
    for (const old of OLD_CACHES) caches.delete(old).catch(() => {});
  } catch (error) {
    notes.push(`cache unavailable (${error.message}): downloading every time`);
  }
  if (cache) {
    const hit = await cache.match(url);
    if (hit) {
      const bytes = await hit.arrayBuffer();
      const checking = performance.now();
      const damage = await entryDamage(bytes, record, hit.headers.get(SAMPLE_HEADER));
      if (!damage) {
        onProgress(bytes.byteLength, bytes.byteLength, "cache");
        return { bytes, source: "cache", notes, networkMs: 0, verifyMs: performance.now() - checking };
      }
      await cache.delete(url); // a damaged cache entry is dropped and fetched again
      notes.push(`the cached copy ${damage} and was fetched again`);
    }
  }
  // no-store: the Cache API above is the one copy; the HTTP cache would hold a second.
  const { bytes, networkMs, verifyMs } = await fetchVerified(url, record, {
    onProgress,
    httpCache: "no-store",
    timed: true,
  });
  if (cache) {
    try {
      const headers = { "Content-Type": "application/octet-stream", [SAMPLE_HEADER]: await sampleDigest(bytes) };
      await cache.put(url, new Response(bytes, { headers }));
    } catch (error) {
      // QuotaExceededError and friends: run from memory, say so.
      notes.push(`not cached (${error.name}: ${error.message}): the next visit downloads it again`);
    }
  }
  return { bytes, source: "network", notes, networkMs, verifyMs };
}

/**
 * The one fetch-and-verify path: a file's bytes from url, refused (IntegrityError) unless their sha256 is the
 * manifest's. timed: the download's bandwidth is remembered for url's origin (speeds.js).
 * @param {string} url
 * @param {{file: string, sha256: string, bytes?: number}} record
 * @param {{onProgress?: (received: number, total: number, source: string) => void, httpCache?: RequestCache, timed?: boolean}} [options]
 * @returns {Promise<{bytes: ArrayBuffer, networkMs: number, verifyMs: number}>}
 */
export async function fetchVerified(url, record, { onProgress = () => {}, httpCache = "default", timed = false } = {}) {
  const started = performance.now();
  const bytes = await download(url, record.bytes, onProgress, httpCache);
  const networkMs = performance.now() - started;
  if (timed) recordDownload(url, bytes.byteLength, networkMs);
  const digest = await sha256(bytes);
  const verifyMs = performance.now() - started - networkMs;
  if (digest !== record.sha256) {
    throw new IntegrityError(
      `${record.file}: sha256 ${digest} does not match the manifest's ${record.sha256}; refusing to run it`,
    );
  }
  return { bytes, networkMs, verifyMs };
}

/**
 * A variant's (or a form's) reference file: golden inputs and native onnxruntime's outputs for them
 * (docs/reference/manifest.md `reference`), verified, decoded. Null when the record names none.
 * @param {(file: string) => string} fileUrl where the repository's files are served
 * @param {{reference?: {file: string, sha256: string}}} record
 * @returns {Promise<{inputs: import("../tensors/tensors.js").Tensors, outputs: import("../tensors/tensors.js").Tensors, bytes: number} | null>}
 */
export async function loadReference(fileUrl, record) {
  if (!record.reference) return null;
  const { bytes } = await fetchVerified(fileUrl(record.reference.file), record.reference);
  const body = JSON.parse(new TextDecoder().decode(bytes));
  return { inputs: decodeTensors(body.inputs), outputs: decodeTensors(body.outputs), bytes: bytes.byteLength };
}

async function download(url, expected, onProgress, httpCache) {
  let response;
  try {
    response = await fetch(url, { cache: httpCache });
  } catch (error) {
    throw fetchFailed(url, error);
  }
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  const total = Number(response.headers.get("Content-Length")) || expected || 0;
  const reader = response.body.getReader();
  const chunks = [];
  let received = 0;
  onProgress(0, total, "network");
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.byteLength;
    onProgress(received, total, "network");
  }
  const bytes = new Uint8Array(received);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes.buffer;
}

// What is wrong with a cached entry (a phrase for the notes), or null when it passes.
async function entryDamage(bytes, record, recordedSample) {
  if (record.bytes != null && bytes.byteLength !== record.bytes) {
    return `has ${bytes.byteLength} bytes, not the manifest's ${record.bytes}`;
  }
  if (!recordedSample) return "has no sample hash (written by an older onnxport)";
  if ((await sampleDigest(bytes)) !== recordedSample) return "failed its sampled sha256 check";
  return null;
}

// sha256 of SAMPLE_SLICES slices of the bytes at evenly spaced offsets (all of them when small).
export async function sampleDigest(bytes) {
  const view = new Uint8Array(bytes);
  if (view.byteLength <= SAMPLE_SLICES * SLICE) return sha256(view);
  const sample = new Uint8Array(SAMPLE_SLICES * SLICE);
  const step = (view.byteLength - SLICE) / (SAMPLE_SLICES - 1);
  for (let i = 0; i < SAMPLE_SLICES; i += 1) {
    const start = Math.round(i * step);
    sample.set(view.subarray(start, start + SLICE), i * SLICE);
  }
  return sha256(sample);
}

export async function sha256(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Forgets every model file this browser cached (the next load downloads again). @returns {Promise<boolean>} */
export async function clearCache() {
  return caches.delete(CACHE);
}

// The URLs in the cache: the plan counts no download time for them.
export async function cachedUrls() {
  try {
    if (!(await caches.has(CACHE))) return new Set();
    const cache = await caches.open(CACHE);
    return new Set((await cache.keys()).map((request) => request.url));
  } catch {
    return new Set();
  }
}
