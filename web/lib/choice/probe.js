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
 *   the WebGPU adapter (Firefox gives empty strings); fallback: a software one (SwiftShader, lavapipe), correct but slow
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
  // WebKit can have a navigator.gpu that is null, a browser with WebGPU switched off none at all: no WebGPU either way.
  const gpu = /** @type {GPU | null | undefined} */ (navigator.gpu);
  if (!gpu || typeof gpu.requestAdapter !== "function") {
    result.webgpuReason = `this browser has no WebGPU (navigator.gpu is ${absent(navigator, "gpu")})`;
    return;
  }
  try {
    /** @type {GPUAdapter & {isFallbackAdapter?: boolean}} (older Chrome: on the adapter, not its info) */
    const adapter = await gpu.requestAdapter();
    if (!adapter) {
      result.webgpuReason = "navigator.gpu.requestAdapter() found no adapter";
      return;
    }
    /** @type {Partial<GPUAdapterInfo> & {isFallbackAdapter?: boolean}} (older browsers: no info) */
    const info = adapter.info ?? {};
    result.webgpu = true;
    result.shaderF16 = Boolean(adapter.features?.has("shader-f16"));
    const named = {
      vendor: info.vendor ?? "",
      architecture: info.architecture ?? "",
      device: info.device ?? "",
      description: info.description ?? "",
    };
    result.adapter = {
      ...named,
      fallback: softwareAdapter(named, info.isFallbackAdapter ?? adapter.isFallbackAdapter),
    };
  } catch (error) {
    result.webgpuReason = `requestAdapter() failed: ${error?.message ?? error}`;
  }
}

// The software rasterizers WebGPU runs on when there is no GPU (or the GPU is blocked): Chromium's SwiftShader,
// Mesa's lavapipe/llvmpipe/softpipe (Firefox on Linux), Windows' WARP ("Microsoft Basic Render Driver").
const SOFTWARE = /swiftshader|lavapipe|llvmpipe|softpipe|basic render driver|\bwarp\b/i;

/**
 * Whether an adapter is a software one: the browser says so (isFallbackAdapter: Firefox's lavapipe gives it with
 * an empty adapter info) or its info names a software rasterizer (Chromium's SwiftShader says so in architecture).
 * @param {{vendor: string, architecture: string, device: string, description: string}} named
 * @param {boolean|undefined} isFallbackAdapter
 */
export function softwareAdapter(named, isFallbackAdapter) {
  return Boolean(isFallbackAdapter) || SOFTWARE.test(Object.values(named).join(" "));
}

// "null" (the property exists, empty: WebKit) or "missing".
function absent(object, name) {
  return name in object && object[name] === null ? "null" : "missing";
}

async function probeWebNn(result) {
  const ml = /** @type {Navigator & {ml?: {createContext?(): Promise<unknown>} | null}} */ (navigator).ml;
  if (!ml || typeof ml.createContext !== "function") {
    result.webnnReason = `this browser has no WebNN (navigator.ml is ${absent(navigator, "ml")})`;
    return;
  }
  try {
    await ml.createContext();
    result.webnn = true;
  } catch (error) {
    result.webnnReason = `navigator.ml.createContext() failed: ${error?.message ?? error}`;
  }
}

/**
 * The most WebAssembly threads this page can run, and why no more: threads need cross-origin isolation and
 * SharedArrayBuffer; beyond 4 the small demo models gain nothing. hardwareConcurrency is only a ceiling, and
 * where the browser is known to report more cores than the machine has (`overstated`: WebKit, whose WebKitGTK
 * says 4 on a 2-core machine) threads.js starts on one thread until a trial measured the ceiling.
 * @param {Pick<Device, "crossOriginIsolated" | "sharedMemory" | "hardwareConcurrency"> & {userAgent?: string}} device
 * @returns {{threads: number, why: string, overstated?: string}}
 */
export function threadCeiling(device) {
  if (!device.crossOriginIsolated)
    return {
      threads: 1,
      why: "one thread: the page is not cross-origin isolated (threads need its COOP and COEP headers)",
    };
  if (device.sharedMemory === false)
    return { threads: 1, why: "one thread: this browser gives the page no SharedArrayBuffer, which threads need" };
  const cores = device.hardwareConcurrency || 1;
  if (cores <= 1) return { threads: 1, why: "one thread: the browser reports one core" };
  const threads = Math.min(4, cores);
  const ceiling = {
    threads,
    why: `up to ${threads} threads (the browser reports ${cores} cores${cores > 4 ? "; more gain nothing on these models" : ""})`,
  };
  const engine = browserName(device.userAgent);
  if (engine !== "WebKitGTK" && !engine.startsWith("Safari")) return ceiling;
  return { ...ceiling, overstated: `${engine} reports ${cores} cores, which can be more than the machine has` };
}

/** The page's thread ceiling (threadCeiling): what the runtime rows with threads "all" start with. */
export function threadsFor(device) {
  return threadCeiling(device).threads;
}

// The browser engine and major version from the user agent ("Chrome 131"): headless and
// headed builds of one version are the same engine. A Safari-like agent on desktop Linux is
// WebKitGTK, not Safari; its "Version/60.5" is a frozen number, not its version (2.50 here), so
// it is named without one.
export function browserName(userAgent) {
  const agent = userAgent ?? "";
  const match = /(?:Headless)?(Chrome|Firefox|Version)\/(\d+)/.exec(agent);
  if (!match) return "unknown browser";
  if (match[1] !== "Version") return `${match[1]} ${match[2]}`;
  const gtk = /\bLinux\b/.test(agent) && !/Android/.test(agent);
  return gtk ? "WebKitGTK" : `Safari ${match[2]}`;
}

// A "kind of device": what decides a runtime's speed and correctness. Benchmarks and
// `onnxport check` verdicts apply to devices of the same kind.
/** @param {Device} device @returns {string} */
export function deviceKind(device) {
  const a = device.adapter;
  // Firefox's lavapipe gives an empty adapter info: the adapter is then named by what the probe knows.
  const gpu = a
    ? `${[a.vendor, a.architecture].filter(Boolean).join(" ") || "unnamed WebGPU adapter"}${a.fallback ? " (software)" : ""}`
    : "no WebGPU";
  return `${browserName(device.userAgent)} · ${device.hardwareConcurrency} cores · ${gpu}`;
}

// This exact device: verdicts of first-use verification are remembered under it.
export function fingerprint(device) {
  const a = device.adapter ?? {};
  return [device.userAgent, a.vendor, a.architecture, a.device, a.description, a.fallback, device.webnn].join("|");
}
