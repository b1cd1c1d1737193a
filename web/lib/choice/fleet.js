// What the fleet knows about a device's class: the verdicts and times other browsers of the same class
// reported to the server (GET api/fleet, docs/reference/fleet.md). The server counts one vote per distinct client and
// publishes a verdict only once k of them agree, so the plan can take it as it stands: a "fail" demotes a
// runtime before any download, and measured times stand in for the bench and priors. A fleet "pass" vouches
// for nothing: first-use verification runs all the same (verify.js).
import { browserName } from "./probe.js";

/** @import { Device } from "./probe.js" */

/**
 * A device class as reports name it: the engine and its major version, the WebGPU adapter's vendor and
 * architecture, and a bucket of the core count (the server groups by these fields, and shows class_key).
 * @typedef {{engine: string, engine_major: number|null, adapter_vendor: string, adapter_architecture: string,
 *   software_adapter: boolean, cores: string}} DeviceClass
 */

// The core-count buckets: [most cores, name]; more than the last is "17+". The server's table is the same
// (server/onnxport/serving/fleet/classes.py); tests/vectors/fleet_classes.json holds both to it.
/** @type {ReadonlyArray<[number, string]>} */
export const CORE_BUCKETS = Object.freeze([
  [1, "1"],
  [2, "2"],
  [4, "3-4"],
  [8, "5-8"],
  [16, "9-16"],
]);
const ADAPTER_TEXT = 64;

/** @param {number} cores @returns {string} */
export function coresBucket(cores) {
  const n = Math.max(1, Math.floor(cores || 1));
  return CORE_BUCKETS.find(([most]) => n <= most)?.[1] ?? "17+";
}

/** This device's class (what a report says of the device, and nothing more). @param {Device} device @returns {DeviceClass} */
export function deviceClass(device) {
  const name = browserName(device.userAgent); // "Chrome 131", "WebKitGTK", "unknown browser"
  const [, engine = "unknown", major] = /^(Chrome|Firefox|Safari|WebKitGTK)(?: (\d+))?$/.exec(name) ?? [];
  const text = (value) =>
    String(value ?? "")
      .trim()
      .toLowerCase()
      .slice(0, ADAPTER_TEXT);
  const a = device.adapter;
  return {
    engine,
    engine_major: major ? Number(major) : null,
    adapter_vendor: a ? text(a.vendor) : "none",
    adapter_architecture: a ? text(a.architecture) : "",
    software_adapter: Boolean(a?.fallback),
    cores: coresBucket(device.hardwareConcurrency),
  };
}

/** A class in words, as the server's class_key: "Chrome 131 · 2 cores · google swiftshader (software)". @param {DeviceClass} c */
export function classKey(c) {
  const engine = c.engine_major === null ? c.engine : `${c.engine} ${c.engine_major}`;
  const cores = `${c.cores} ${c.cores === "1" ? "core" : "cores"}`;
  const named = [c.adapter_vendor, c.adapter_architecture].filter(Boolean).join(" ");
  const gpu =
    c.adapter_vendor === "none"
      ? "no WebGPU"
      : `${named || "unnamed WebGPU adapter"}${c.software_adapter ? " (software)" : ""}`;
  return `${engine} · ${cores} · ${gpu}`;
}

const CLASS_FIELDS = /** @type {const} */ ([
  "engine",
  "engine_major",
  "adapter_vendor",
  "adapter_architecture",
  "software_adapter",
  "cores",
]);

/** @param {DeviceClass} a @param {DeviceClass} b */
function sameClass(a, b) {
  return CLASS_FIELDS.every((field) => a?.[field] === b?.[field]);
}

/**
 * The fleet's group for a file (by sha256) on a runtime key from devices of this class, or null.
 * @param {any} fleet the server's api/fleet document (null: none)
 * @param {string} sha256 @param {string} key @param {Device} device
 */
export function fleetGroup(fleet, sha256, key, device) {
  if (fleet?.schema !== 1 || !Array.isArray(fleet.groups)) return null;
  const mine = deviceClass(device);
  return fleet.groups.find((g) => g.sha256 === sha256 && g.runtime === key && sameClass(g.class, mine)) ?? null;
}

/** Why the fleet demotes this file on this key here ("failed verification on 14 of 14 devices of this class"), or null. */
export function fleetFailure(fleet, sha256, key, device) {
  const group = fleetGroup(fleet, sha256, key, device);
  if (group?.verdict !== "fail") return null;
  const metric =
    group.metric?.name && typeof group.metric.median === "number"
      ? `; median ${group.metric.name} ${group.metric.median.toPrecision(3)}`
      : "";
  return `failed verification on ${group.fail} of ${group.clients} devices of this class (the fleet's reports${metric})`;
}

/**
 * The fleet's times of a file on a key here, when k or more devices of this class measured them and the fleet has
 * not failed it: {create_ms, first_run_ms, warm_run_ms} each {median, clients, ...} or null.
 */
export function fleetTimes(fleet, sha256, key, device) {
  const group = fleetGroup(fleet, sha256, key, device);
  if (!group || group.verdict === "fail" || !group.times) return null;
  return group.times;
}
