// What this browser measured, remembered across visits: each file's runs on each runtime key and
// the bandwidth of its downloads from each origin. cost.js ranks by them first.
import { forget, readJson, updateJson } from "./store.js";

const SPEEDS = "onnxport-speeds-v2"; // {"sha256|runtime": {warm_ms, first_ms, create_ms, runs}}
// {origin: {bytes_per_ms, bytes, ms, at}}: the latest download of a model file from each origin.
// v1 held one figure for every origin, and none of Chromium's network estimate is kept (below).
const BANDWIDTH = "onnxport-bandwidth-v2";

// Downloads smaller than this measure the request's latency, not the bandwidth.
export const MIN_MEASURED_BYTES = 256 * 1024;

export function ownSpeed(sha256, runtime) {
  return readJson(SPEEDS)[`${sha256}|${runtime}`] ?? null;
}

/** Every file's figures on every runtime: {"sha256|runtime": {warm_ms, first_ms, create_ms, runs}}. */
export function allSpeeds() {
  return readJson(SPEEDS);
}

// One run of a session: its first run is warm-up (kept apart), later runs are warm.
export function recordRun(sha256, runtime, runMs, first) {
  updateJson(SPEEDS, (all) => {
    const entry = (all[`${sha256}|${runtime}`] ??= { runs: 0 });
    if (first) entry.first_ms = runMs;
    else {
      // A running mean of the last few warm runs: steady, yet follows a changed device.
      entry.warm_ms = entry.warm_ms === undefined ? runMs : entry.warm_ms * 0.7 + runMs * 0.3;
      entry.runs += 1;
    }
  });
}

export function recordMeasured(sha256, runtime, { warmMs, createMs }) {
  updateJson(SPEEDS, (all) => {
    const entry = (all[`${sha256}|${runtime}`] ??= { runs: 0 });
    entry.warm_ms = warmMs;
    entry.create_ms = createMs;
    entry.runs += 1;
  });
}

/**
 * One download of a file from `url`, as downloads.js timed it (request to last byte): remembered as the
 * bandwidth of the url's origin when the file is large enough to measure one.
 * @param {string} url @param {number} bytes @param {number} ms
 */
export function recordDownload(url, bytes, ms) {
  if (bytes < MIN_MEASURED_BYTES || !(ms > 0)) return;
  forget("onnxport-bandwidth-v1");
  updateJson(BANDWIDTH, (all) => {
    all[originOf(url)] = { bytes_per_ms: bytes / ms, bytes, ms, at: new Date().toISOString() };
  });
}

/**
 * The bandwidth of downloads from url's origin, as this browser measured it: {bytesPerMs, source}, bytesPerMs
 * null when none was measured. No guess stands in for it: headless Chromium's navigator.connection.downlink said
 * 1.4 and 1.6 Mbit/s on a page of localhost (at 1.6: "+ 114785 ms to download 21.9 MB", for a download that took
 * well under a second), and a fixed figure is as wrong on a LAN as on a phone.
 * @param {string} url
 * @returns {{bytesPerMs: number|null, source: string}}
 */
export function bandwidth(url) {
  const origin = originOf(url);
  const measured = readJson(BANDWIDTH)[origin];
  if (measured?.bytes_per_ms > 0) {
    const size = (measured.bytes / 1024 ** 2).toFixed(1);
    return {
      bytesPerMs: measured.bytes_per_ms,
      source: `${formatRate(measured.bytes_per_ms)}, measured here on ${size} MB from ${origin}`,
    };
  }
  return { bytesPerMs: null, source: `no download from ${origin} measured in this browser yet` };
}

function originOf(url) {
  try {
    return new URL(url, globalThis.location?.href).origin;
  } catch {
    return String(url);
  }
}

/** A bandwidth in bytes per ms, in words: "95 MB/s", "1.2 MB/s", "310 kB/s". */
export function formatRate(bytesPerMs) {
  const perSecond = bytesPerMs * 1000;
  if (perSecond >= 1024 ** 2) {
    const mb = perSecond / 1024 ** 2;
    return `${mb >= 10 ? mb.toFixed(0) : mb.toFixed(1)} MB/s`;
  }
  return `${(perSecond / 1024).toFixed(0)} kB/s`;
}

export function formatMs(ms) {
  if (!Number.isFinite(ms)) return "unknown ms";
  return ms >= 100 ? `${ms.toFixed(0)} ms` : `${ms.toPrecision(2)} ms`;
}
