// Artifact downloads: streamed with progress, sha256-verified before use, kept in the
// Cache API under their hashed URL so a later visit needs no model bytes from the network.
const CACHE = "onnxport-artifacts-v1";

export class IntegrityError extends Error {}

// record: {file, sha256, bytes} from the manifest; url: where that file is served.
export async function loadArtifact(url, record, onProgress = () => {}) {
  const notes = [];
  let cache = null;
  try {
    cache = await caches.open(CACHE);
  } catch (error) {
    notes.push(`cache unavailable (${error.message}): downloading every time`);
  }
  if (cache) {
    const hit = await cache.match(url);
    if (hit) {
      const bytes = await hit.arrayBuffer();
      if ((await sha256(bytes)) === record.sha256) {
        onProgress(bytes.byteLength, bytes.byteLength, "cache");
        return { bytes, source: "cache", notes, networkMs: 0 };
      }
      await cache.delete(url); // a damaged cache entry is dropped and fetched again
      notes.push("the cached copy failed its sha256 check and was fetched again");
    }
  }
  const started = performance.now();
  const bytes = await download(url, record.bytes, onProgress);
  const networkMs = performance.now() - started;
  const digest = await sha256(bytes);
  if (digest !== record.sha256) {
    throw new IntegrityError(
      `${record.file}: sha256 ${digest} does not match the manifest's ${record.sha256}; refusing to run it`,
    );
  }
  if (cache) {
    try {
      await cache.put(url, new Response(bytes, { headers: { "Content-Type": "application/octet-stream" } }));
    } catch (error) {
      // QuotaExceededError and friends: run from memory, say so.
      notes.push(`not cached (${error.name}: ${error.message}): the next visit downloads it again`);
    }
  }
  return { bytes, source: "network", notes, networkMs };
}

async function download(url, expected, onProgress) {
  // no-store: the Cache API above is the one copy; the HTTP cache would hold a second.
  let response;
  try {
    response = await fetch(url, { cache: "no-store" });
  } catch (error) {
    throw new Error(`GET ${url}: ${error.message} (a page on another origin needs the server's cors_origins to list it)`);
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

export async function sha256(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

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
