// Fleet reports (docs/reference/fleet.md): a page that connects with {report: true} tells its server, once per load,
// how each step this browser verified went: the file, the runtime, the verdict with its metric and the times.
// That is all a report holds: the device class (fleet.js deviceClass) and a random token of this browser profile
// that lets the server count distinct clients. No input, output, URL or identifier of the user leaves the page.
import { deviceClass } from "../choice/fleet.js";
import { probe } from "../choice/probe.js";
import { readJson, updateJson } from "../remembered/store.js";

export const REPORT_PATH = "api/fleet/reports";
const TOKEN = "onnxport-fleet-client-v1"; // {token}: random, made here, never derived from the device
const MOST_RESULTS = 8; // the server takes at most 8 results a report

/** @typedef {{create_ms: number|null, first_run_ms: number|null, warm_run_ms: number|null}} ReportTimes */

/**
 * One step's result as a report carries it.
 * @param {{model: string, variant: string, form: string|null, sha256: string, key: string, threads: number|null}} file
 * @param {"pass"|"fail"} verdict
 * @param {object|null} verification verify.js's verification (its metric, max_abs and budget), null for an engine failure
 * @param {Partial<ReportTimes>} times
 */
export function reportResult(file, verdict, verification, times) {
  return {
    model: file.model,
    variant: file.variant,
    form: file.form,
    sha256: file.sha256,
    runtime: file.key,
    threads: Number.isInteger(file.threads) && file.threads > 0 ? file.threads : null,
    verdict,
    metric: metricOf(verification),
    create_ms: finite(times.create_ms),
    first_run_ms: finite(times.first_run_ms),
    warm_run_ms: finite(times.warm_run_ms),
  };
}

// The judged figure: the task metric's first (cosine_min, top1_agreement...), else the largest difference.
function metricOf(verification) {
  if (!verification) return null;
  const [name, value] = Object.entries(verification.metric ?? {}).find(([, v]) => typeof v === "number") ?? [];
  // The budget names its bounds by the metric (cosine_min), or top1_min for top1_agreement.
  const budget = verification.budget ?? {};
  if (name)
    return { name, value: finite(value), limit: finite(budget[name] ?? budget[name.replace(/_agreement$/, "_min")]) };
  return typeof verification.max_abs === "number"
    ? { name: "max_abs", value: finite(verification.max_abs), limit: null }
    : null;
}

function finite(value) {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/**
 * Sends one report of a load's results to the server; never throws, never delays the load (a lost report costs
 * the fleet one vote). Resolves to the server's status, or null when nothing was sent or the request failed.
 * @param {string} url the server's report URL
 * @param {ReturnType<typeof reportResult>[]} results
 * @returns {Promise<number|null>}
 */
export async function sendReport(url, results) {
  if (!results.length) return null;
  try {
    const body = {
      schema: 1,
      client: clientToken(),
      device: deviceClass(await probe()),
      results: results.slice(-MOST_RESULTS),
    };
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      keepalive: true,
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    return response.status;
  } catch {
    return null;
  }
}

/** This browser profile's random token: 16 bytes from crypto.getRandomValues, base64url, kept in localStorage. */
export function clientToken() {
  const kept = readJson(TOKEN).token;
  if (typeof kept === "string" && /^[A-Za-z0-9_-]{22,64}$/.test(kept)) return kept;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  const token = btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
  updateJson(TOKEN, (all) => {
    all.token = token;
  });
  return token;
}
