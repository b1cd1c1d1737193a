// Measured speeds the plan ranks variants by, best source first: this browser's own runs
// (performance page, kept in localStorage), the latest `onnxport bench` (headless Chromium
// on the server's machine), then native onnxruntime at build time (in the manifest).
const KEY = "onnxport-speeds-v1";

export function ownSpeeds() {
  try {
    return JSON.parse(localStorage.getItem(KEY) ?? "{}");
  } catch {
    return {};
  }
}

export function saveOwnSpeeds(results) {
  const speeds = ownSpeeds();
  for (const r of results) {
    if (r.status !== "ok") continue;
    ((speeds[r.model] ??= {})[r.variant] ??= {})[r.runtime] = r.warm.median_ms;
  }
  try {
    localStorage.setItem(KEY, JSON.stringify(speeds));
  } catch {
    // storage full or disabled: the figures are shown but not remembered
  }
}

let benchLoaded = null;

export function latestBench() {
  benchLoaded ??= fetch("/api/bench").then((r) => (r.status === 200 ? r.json() : null)).catch(() => null);
  return benchLoaded;
}

// {variant: {ms, source}} for one model and runtime.
export function speedsFor(model, runtime, bench) {
  const own = ownSpeeds()[model.name] ?? {};
  const benched = {};
  for (const r of bench?.browser?.results ?? []) {
    if (r.model === model.name && r.runtime === runtime && r.status === "ok") benched[r.variant] = r.warm.median_ms;
  }
  const result = {};
  for (const [variant, record] of Object.entries(model.variants)) {
    if (typeof own[variant]?.[runtime] === "number") result[variant] = { ms: own[variant][runtime], source: "measured in this browser" };
    else if (typeof benched[variant] === "number") result[variant] = { ms: benched[variant], source: "onnxport bench (headless Chromium)" };
    else if (typeof record.speed?.native_ms === "number") result[variant] = { ms: record.speed.native_ms, source: "native onnxruntime at build time" };
  }
  return result;
}
