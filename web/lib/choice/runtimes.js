// Every runtime the library knows, one row each, in the plan's order of preference (a tie in
// expected time goes to the earlier row). Every other list of runtime names in web/ is made from
// this table; adding a runtime is one row here plus its rows in the server's tolerance table
// (server/onnxport/accuracy/browser_tolerances.py, whose names a test pins against these keys).
//   key        the name checks, benchmarks, verdicts, speeds and /api/tolerances use ("variant/key")
//   runtime    the name a user pins and a plan step carries: `wasm-1t` is how `wasm` runs when the
//              page has no threads (threadsFor in probe.js), so its runtime is "wasm"
//   provider   onnxruntime-web's execution provider (null: not in the browser)
//   bundle     the onnxruntime-web file its worker loads (ort-runtime.js): the WebAssembly-only
//              bundle is markedly faster on the CPU than the one that carries the WebGPU bridge
//   threads    "all": the page's threads (threadsFor); 1: one
//   kernels    the row of kernels.js's measured table (the operators its bundle has no kernel for)
//   needs      the probe's flag (probe.js) it needs, and what to say when the probe gave no reason
//   prior      cost.js's guess until measured: native ms at build time x factor + overheadMs
//   software   a software adapter (SwiftShader): correct but slow, its own prior
//   shaderF16  fp16 files need the adapter feature shader-f16: the native WebGPU execution provider
//              refuses them without it
//   checked    `onnxport check` and `onnxport bench` run it in Chromium (server/onnxport/check/verdict_file.py)
//   gpu        it computes on the GPU adapter: checked on a few rows (SwiftShader is about 500x slower
//              than native), a few bench runs, its verbose log read for where nodes ran
//   label      its name in charts and tables
import { threadsFor } from "./probe.js";

/**
 * One runtime (the fields are described above).
 * @typedef {object} RuntimeRow
 * @property {string} key
 * @property {string} runtime
 * @property {string|null} provider
 * @property {string|null} bundle
 * @property {number|"all"} threads
 * @property {string|null} kernels
 * @property {{flag: string, missing: string}|null} needs
 * @property {{factor: number, overheadMs: number, why: string}|null} prior
 * @property {{prior: {factor: number, overheadMs: number, why: string}, note: string}|null} software
 * @property {boolean} shaderF16
 * @property {boolean} checked
 * @property {boolean} gpu
 * @property {string} label
 */

/** @type {(fields: Partial<RuntimeRow> & {key: string}) => Readonly<RuntimeRow>} */
const row = (fields) =>
  Object.freeze({
    provider: null,
    bundle: null,
    threads: 1,
    kernels: null,
    needs: null,
    prior: null,
    software: null,
    shaderF16: false,
    checked: false,
    gpu: false,
    ...fields,
    label: fields.label ?? fields.key,
    runtime: fields.runtime ?? fields.key,
  });

export const RUNTIMES = Object.freeze([
  row({
    key: "webgpu",
    provider: "webgpu",
    bundle: "ort.webgpu.min.mjs",
    kernels: "webgpu",
    needs: Object.freeze({ flag: "webgpu", missing: "no WebGPU adapter" }),
    prior: Object.freeze({
      factor: 1,
      overheadMs: 1,
      why: "a GPU taken as about native speed, plus dispatch and read-back",
    }),
    software: Object.freeze({
      prior: Object.freeze({
        factor: 300,
        overheadMs: 5,
        why: "a software WebGPU adapter taken as about 100x slower than WebAssembly",
      }),
      note: "software WebGPU adapter: ranked after WebAssembly until measured faster",
    }),
    shaderF16: true,
    checked: true,
    gpu: true,
  }),
  row({
    // The WebGPU bundle carries the WebNN execution provider too.
    key: "webnn",
    provider: "webnn",
    bundle: "ort.webgpu.min.mjs",
    kernels: "webnn",
    needs: Object.freeze({ flag: "webnn", missing: "no WebNN context" }),
    prior: Object.freeze({ factor: 1, overheadMs: 1, why: "WebNN taken as about native speed" }),
  }),
  row({
    key: "wasm",
    provider: "wasm",
    bundle: "ort.wasm.min.mjs",
    threads: "all",
    kernels: "wasm",
    checked: true,
    prior: Object.freeze({ factor: 3, overheadMs: 0.05, why: "WebAssembly with threads taken as about 3x native" }),
  }),
  row({
    key: "wasm-1t",
    runtime: "wasm",
    provider: "wasm",
    bundle: "ort.wasm.min.mjs",
    threads: 1,
    kernels: "wasm",
    checked: true,
    prior: Object.freeze({
      factor: 6,
      overheadMs: 0.05,
      why: "WebAssembly on one thread taken as about 6x native on all cores",
    }),
  }),
  // The server's onnxruntime: the reference, always available, the plan's last step.
  row({ key: "server" }),
]);

const BY_KEY = new Map(RUNTIMES.map((r) => [r.key, r]));

/** The row of a key, or undefined. @param {string} key @returns {Readonly<RuntimeRow>|undefined} */
export function runtime(key) {
  return BY_KEY.get(key);
}

/** Keys of the rows `keep` accepts, in table order. @param {(row: RuntimeRow) => boolean} [keep] @returns {string[]} */
export function keys(keep = () => true) {
  return RUNTIMES.filter(keep).map((r) => r.key);
}

/** The runtimes a user can pin and a plan step names: webgpu, webnn, wasm, server. */
export const PINNABLE = Object.freeze(keys((r) => r.runtime === r.key));
/** The runtimes that run in this browser, each in a worker of its own. */
export const BROWSER = Object.freeze(keys((r) => r.provider !== null));
/** The runtimes `onnxport check` and the bench run, CPU first: quick results before the slow adapter. */
export const CHECKED = Object.freeze(
  RUNTIMES.filter((r) => r.checked)
    .sort((a, b) => Number(a.gpu) - Number(b.gpu))
    .map((r) => r.key),
);

/** Whether a key (or a pinnable runtime) runs in this browser; false for the server. @param {string} key */
export function inBrowser(key) {
  return Boolean(BY_KEY.get(key)?.provider);
}

/** The row of a browser runtime's key; throws, naming them, for any other. @param {string} key @returns {Readonly<RuntimeRow>} */
export function browserRuntime(key) {
  const found = BY_KEY.get(key);
  if (!found?.provider)
    throw new Error(`unknown browser runtime ${JSON.stringify(key)}; runtimes: ${BROWSER.join(", ")}`);
  return found;
}

/**
 * How a runtime runs on this device: {key, threads}. The one place `wasm` becomes `wasm-1t`: a
 * runtime that takes all the page's threads, on a page with one (no cross-origin isolation), is its
 * one-thread row, whose tolerances, verdicts and speeds apply.
 */
export function placed(key, device) {
  const found = browserRuntime(key);
  if (found.threads !== "all") return { key: found.key, threads: 1 };
  const threads = threadsFor(device);
  const single = threads === 1 && oneThread(found.key);
  return { key: single || found.key, threads };
}

/**
 * The key of the same runtime on one thread (wasm -> wasm-1t), for a row that takes all the page's threads; else
 * null. threads.js measures the two against each other.
 * @param {string} key
 * @returns {string|null}
 */
export function oneThread(key) {
  const found = BY_KEY.get(key);
  if (found?.threads !== "all") return null;
  return (
    RUNTIMES.find((r) => r.runtime === found.runtime && r.threads === 1 && r.provider === found.provider)?.key ?? null
  );
}

/** Why this device cannot run the runtime at all (the probe's reason), or null. */
export function unavailableReason(key, device) {
  const needs = BY_KEY.get(key)?.needs;
  if (!needs || device[needs.flag]) return null;
  return device[`${needs.flag}Reason`] || needs.missing;
}

/**
 * Why this device's adapter cannot run the variant's files on the runtime, or null: fp16 where the
 * runtime needs shader-f16 for it and the adapter lacks it (the native WebGPU execution provider
 * refuses such models). A variant holds fp16 when built as fp16 or when its file computes in fp16.
 */
export function shaderF16Reason(key, variantRecord, device) {
  const fp16 = variantRecord.precision === "fp16" || variantRecord.arithmetic === "fp16";
  if (!fp16 || !BY_KEY.get(key)?.shaderF16 || device.shaderF16) return null;
  return "fp16 needs the adapter feature shader-f16, which this adapter lacks";
}

/** Why this device cannot run the variant on the runtime at all, before trying: either reason above, or null. */
export function cannotRun(key, variantRecord, device) {
  return unavailableReason(key, device) ?? shaderF16Reason(key, variantRecord, device);
}
