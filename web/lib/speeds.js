// What this browser measured, remembered across visits: each file's runs on each runtime key and
// the network's bandwidth. cost.js ranks by them first.
import { readJson, updateJson } from "./store.js";

const SPEEDS = "onnxport-speeds-v2"; // {"sha256|runtime": {warm_ms, first_ms, create_ms, runs}}
const BANDWIDTH = "onnxport-bandwidth-v1"; // {bytes_per_ms}

const DEFAULT_BYTES_PER_MS = 1250; // 10 Mbit/s, the web's usual planning figure

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

export function recordDownload(bytes, ms) {
  if (bytes < 256 * 1024 || ms <= 0) return; // small files measure latency, not bandwidth
  updateJson(BANDWIDTH, (b) => { b.bytes_per_ms = bytes / ms; });
}

export function bandwidth() {
  const measured = readJson(BANDWIDTH).bytes_per_ms;
  if (measured) return { bytesPerMs: measured, source: "measured here" };
  // Mbit/s, where the browser says (the Network Information API, Chromium only).
  const downlink = /** @type {Navigator & {connection?: {downlink?: number}}} */ (globalThis.navigator)?.connection?.downlink;
  if (downlink) return { bytesPerMs: downlink * 125, source: "the browser's network estimate" };
  return { bytesPerMs: DEFAULT_BYTES_PER_MS, source: "assumed 10 Mbit/s" };
}

export function formatMs(ms) {
  if (!Number.isFinite(ms)) return "unknown ms";
  return ms >= 100 ? `${ms.toFixed(0)} ms` : `${ms.toPrecision(2)} ms`;
}
