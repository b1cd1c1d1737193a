// Expected run time of (artifact, runtime) on this device, best source first: this browser's
// own measurements (remembered), the latest `onnxport bench` from a device of the same kind,
// then native onnxruntime at build time (the manifest) times a per-runtime prior.
import { deviceKind } from "./probe.js";
import { runtime as runtimeRow } from "./runtimes.js";
import { readJson, updateJson } from "./store.js";

const SPEEDS = "onnxport-speeds-v2"; // {"sha256|runtime": {warm_ms, first_ms, create_ms, runs}}
const BANDWIDTH = "onnxport-bandwidth-v1"; // {bytes_per_ms}

// Until a runtime is measured here or by a bench: native ms at build time x factor + overhead,
// the runtime's `prior` in runtimes.js (its `software` one on a software adapter). These are
// priors, fixed guesses: the factors were read once off `onnxport bench` on the development
// machine (minilm, all-MiniLM-L6-v2), not measured for this model or device; the plan says
// "prior" for every figure made from them.
export function prior(runtime, device) {
  const row = runtimeRow(runtime);
  return (device.adapter?.fallback && row?.software?.prior) || row?.prior || null;
}
const DEFAULT_BYTES_PER_MS = 1250; // 10 Mbit/s, the web's usual planning figure

export function ownSpeed(sha256, runtime) {
  return readJson(SPEEDS)[`${sha256}|${runtime}`] ?? null;
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
  const downlink = globalThis.navigator?.connection?.downlink; // Mbit/s, where the browser says
  if (downlink) return { bytesPerMs: downlink * 125, source: "the browser's network estimate" };
  return { bytesPerMs: DEFAULT_BYTES_PER_MS, source: "assumed 10 Mbit/s" };
}

// The bench's warm median for this artifact and runtime, when it ran on a device of this kind.
function benchSpeed(bench, device, model, variant, record, runtime) {
  const benched = bench?.browser;
  if (!benched?.device || deviceKind(benched.device) !== deviceKind(device)) return null;
  const row = benched.results?.find((r) => r.model === model.name && r.variant === variant && r.runtime === runtime
    && r.status === "ok" && (r.sha256 ? r.sha256 === record.sha256 : r.bytes === record.bytes));
  return row?.warm?.median_ms ?? null;
}

// {ms, source, measured, prior}: measured = from a browser run (here or a bench); prior = a fixed
// factor times the build-time native figure, whose source starts with "prior".
export function expectedRun({ model, variant, record, runtime, device, bench }) {
  const own = ownSpeed(record.sha256, runtime);
  const ownMs = own?.warm_ms ?? own?.first_ms;
  if (typeof ownMs === "number") return { ms: ownMs, source: "measured in this browser", measured: true };
  const benched = benchSpeed(bench, device, model, variant, record, runtime);
  if (typeof benched === "number") return { ms: benched, source: "onnxport bench on this kind of device", measured: true };
  const native = record.speed?.native_ms;
  const guess = prior(runtime, device);
  if (typeof native === "number" && guess) {
    return { ms: native * guess.factor + guess.overheadMs, source: `prior: native ${native.toFixed(3)} ms at build time, ${guess.why}; not measured yet`, measured: false, prior: true };
  }
  return { ms: Infinity, source: "never measured, and no build-time figure for a prior", measured: false };
}

export function formatMs(ms) {
  if (!Number.isFinite(ms)) return "unknown ms";
  return ms >= 100 ? `${ms.toFixed(0)} ms` : `${ms.toPrecision(2)} ms`;
}
