// What this browser can do: WebGPU (and its adapter), fp16 shaders, WebNN, threads, SIMD.
// Smallest module using a SIMD instruction (i8x16.splat): it validates only where SIMD exists.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

/**
 * What this browser can do, probed once per page: the plan, the verdicts and the bench read it.
 * @typedef {object} Device
 * @property {boolean} webgpu an adapter was found
 * @property {string|null} webgpuReason why not, in words
 * @property {{vendor: string, architecture: string, device: string, description: string, fallback: boolean} | null} adapter
 *   the WebGPU adapter; fallback: a software one (SwiftShader), correct but slow
 * @property {boolean} shaderF16 the adapter has shader-f16 (fp16 models on WebGPU)
 * @property {boolean} webnn
 * @property {string|null} webnnReason
 * @property {boolean} crossOriginIsolated WebAssembly threads need it (COOP and COEP headers on the page)
 * @property {boolean} [sharedMemory] SharedArrayBuffer exists: threads need it too, and an isolated WebKit page
 *   can lack it (absent: assumed present)
 * @property {number} hardwareConcurrency
 * @property {boolean} wasmSimd
 * @property {string} userAgent
 */

/** @type {Promise<Device> | null} */
let probed = null;

// Probed once per page: requesting an adapter or a WebNN context is not free.
/** @returns {Promise<Device>} */
export function probe() {
  probed ??= probeNow();
  return probed;
}

async function probeNow() {
  /** @type {Device} */
  const result = {
    webgpu: false,
    webgpuReason: null,
    adapter: null,
    shaderF16: false,
    webnn: false,
    webnnReason: null,
    crossOriginIsolated: self.crossOriginIsolated === true,
    sharedMemory: typeof SharedArrayBuffer === "function",
    hardwareConcurrency: navigator.hardwareConcurrency || 1,
    wasmSimd: WebAssembly.validate(SIMD_PROBE),
    userAgent: navigator.userAgent,
  };
  await Promise.all([probeWebGpu(result), probeWebNn(result)]);
  return result;
}

async function probeWebGpu(result) {
  // WebKit can have a navigator.gpu that is null: no WebGPU either.
  if (!navigator.gpu) {
    result.webgpuReason = `this browser has no WebGPU (navigator.gpu is ${"gpu" in navigator ? "null" : "missing"})`;
    return;
  }
  try {
    /** @type {GPUAdapter & {isFallbackAdapter?: boolean}} (older Chrome: on the adapter, not its info) */
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) {
      result.webgpuReason = "navigator.gpu.requestAdapter() found no adapter";
      return;
    }
    /** @type {Partial<GPUAdapterInfo> & {isFallbackAdapter?: boolean}} (older browsers: no info) */
    const info = adapter.info ?? {};
    result.webgpu = true;
    result.shaderF16 = adapter.features.has("shader-f16");
    result.adapter = {
      vendor: info.vendor ?? "", architecture: info.architecture ?? "", device: info.device ?? "",
      description: info.description ?? "",
      // A fallback adapter is a software one (SwiftShader): correct, but slow.
      fallback: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter) || info.architecture === "swiftshader",
    };
  } catch (error) {
    result.webgpuReason = `requestAdapter() failed: ${error.message}`;
  }
}

async function probeWebNn(result) {
  if (!("ml" in navigator)) {
    result.webnnReason = "this browser has no WebNN (navigator.ml is missing)";
    return;
  }
  try {
    await /** @type {Navigator & {ml: {createContext(): Promise<unknown>}}} */ (navigator).ml.createContext();
    result.webnn = true;
  } catch (error) {
    result.webnnReason = `navigator.ml.createContext() failed: ${error.message}`;
  }
}

export function threadsFor(device) {
  // Threads need cross-origin isolation and SharedArrayBuffer; beyond 4 the small demo models gain nothing.
  if (!device.crossOriginIsolated || device.sharedMemory === false) return 1;
  return Math.min(4, device.hardwareConcurrency);
}

// The browser engine and major version from the user agent ("Chrome 131"): headless and
// headed builds of one version are the same engine.
export function browserName(userAgent) {
  const match = /(?:Headless)?(Chrome|Firefox|Version)\/(\d+)/.exec(userAgent ?? "");
  if (!match) return "unknown browser";
  return `${match[1] === "Version" ? "Safari" : match[1]} ${match[2]}`;
}

// A "kind of device": what decides a runtime's speed and correctness. Benchmarks and
// `onnxport check` verdicts apply to devices of the same kind.
/** @param {Device} device @returns {string} */
export function deviceKind(device) {
  const gpu = device.adapter
    ? [device.adapter.vendor, device.adapter.architecture].filter(Boolean).join(" ") + (device.adapter.fallback ? " (software)" : "")
    : "no WebGPU";
  return `${browserName(device.userAgent)} · ${device.hardwareConcurrency} cores · ${gpu || "WebGPU adapter"}`;
}

// This exact device: verdicts of first-use verification are remembered under it.
export function fingerprint(device) {
  const a = device.adapter ?? {};
  return [device.userAgent, a.vendor, a.architecture, a.device, a.description, a.fallback, device.webnn].join("|");
}
