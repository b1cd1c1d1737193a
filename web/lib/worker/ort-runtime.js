// The only module that imports onnxruntime-web. It runs inside a worker (worker.js),
// one worker per runtime, so each loads just the bundle it needs (runtimes.js names it): the
// WebAssembly-only bundle is markedly faster on the CPU than the one that carries the WebGPU bridge.
// WebGPU uses the native WebGPU execution provider (ort.webgpu): on an adapter without
// shader-f16 it refuses fp16 models, where the older JSEP bridge (ort.all) returned zeros,
// and it ran QDQ int8 correctly where JSEP returned garbage (both seen by `onnxport check`).
// It has no ai.onnx.ml operators: such models fall back to WebAssembly. The same bundle
// carries the WebNN execution provider.
// A one-node model (Identity on a float[1]), 78 bytes: creating a session from it starts the
// backend (fetches and instantiates the .wasm, starts its threads; on WebGPU, gets the device),
// so that this work is done at init, while the page is still reading the model's bytes.
const WARM_UP =
  "CAgSCG9ubnhwb3J0OjoKEAoBeBIBeSIISWRlbnRpdHkSBHdhcm1aDwoBeBIKCggIARIECgIIAWIPCgF5EgoKCAgBEgQKAggBQgQKABAN";
let ort = null;
let loaded = null;
let starting = null;
/** @type {string|false} tests only: the perturbation mode, or false */
let perturbed = false;
const sessions = new Map();
let nextSession = 1;

// runtime: the execution provider; bundle: the onnxruntime-web file to load, from ortBase, the
// absolute URL of onnxruntime-web's dist folder (the bundle and its .wasm files).
// Later calls share the first one's start (the page starts the worker before a model is read).
/**
 * @param {string} runtime
 * @param {{bundle?: string, threads?: number, verbose?: boolean, ortBase?: string, perturb?: string|false}} [options]
 */
export function init(runtime, { bundle, threads = 1, verbose = false, ortBase, perturb = false } = {}) {
  if (!bundle)
    return Promise.reject(new Error(`init needs the onnxruntime-web bundle to load for ${JSON.stringify(runtime)}`));
  if (loaded && loaded !== runtime) return Promise.reject(new Error(`this worker runs ${loaded}, not ${runtime}`));
  if (!starting) {
    if (!ortBase) return Promise.reject(new Error("init needs ortBase, the URL of onnxruntime-web's files"));
    loaded = runtime;
    perturbed = perturb;
    starting = start(runtime, { bundle, threads, verbose, ortBase }).catch((error) => {
      starting = null; // a later call may try again
      loaded = null;
      throw error;
    });
  }
  return starting;
}

async function start(runtime, { bundle, threads, verbose, ortBase }) {
  const began = performance.now();
  ort = await import(new URL(bundle, ortBase).href);
  ort.env.wasm.wasmPaths = ortBase;
  // Threads need SharedArrayBuffer, which only a cross-origin isolated page has.
  ort.env.wasm.numThreads = self.crossOriginIsolated ? Math.max(1, threads) : 1;
  ort.env.logLevel = verbose ? "verbose" : "error";
  const warm = await ort.InferenceSession.create(
    Uint8Array.from(atob(WARM_UP), (c) => c.charCodeAt(0)),
    { executionProviders: [runtime] },
  );
  await warm.release();
  return {
    runtime,
    version: ort.env.versions?.web ?? null,
    threads: ort.env.wasm.numThreads,
    initMs: performance.now() - began,
  };
}

export async function createSession(bytes, { verbose = false, optimization = "all", profile = false } = {}) {
  const started = performance.now();
  const session = await ort.InferenceSession.create(new Uint8Array(bytes), {
    executionProviders: [loaded],
    graphOptimizationLevel: optimization,
    logSeverityLevel: verbose ? 0 : 3,
    enableProfiling: profile,
  });
  const id = nextSession++;
  sessions.set(id, session);
  return {
    id,
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    createMs: performance.now() - started,
  };
}

export async function run(id, feeds) {
  const session = sessions.get(id);
  if (!session) throw new Error(`no session ${id} in this worker`);
  const tensors = {};
  for (const [name, t] of Object.entries(feeds)) tensors[name] = new ort.Tensor(t.type, t.data, t.dims);
  const started = performance.now();
  const results = await session.run(tensors);
  const runMs = performance.now() - started;
  const outputs = {};
  for (const [name, tensor] of Object.entries(results)) {
    const data = tensor.location === "cpu" ? tensor.data : await tensor.getData();
    outputs[name] = { type: tensor.type, dims: [...tensor.dims], data };
  }
  if (perturbed) perturb(outputs, perturbed);
  return { outputs, runMs };
}

// Tests only (the client refuses it outside automation): a runtime that silently gives wrong
// answers, to prove verification catches one. mode "nudge": the first element of each float output
// is 1 off; "negate": every value is negated as well, so no task metric survives it.
function perturb(outputs, mode) {
  for (const output of Object.values(outputs)) {
    if (!output.type.startsWith("float") || !output.data.length) continue;
    if (mode === "negate")
      output.data.forEach((v, i) => {
        output.data[i] = -v;
      });
    output.data[0] += 1;
  }
}

// onnxruntime's profiler prints its trace to the console in WebAssembly; worker.js keeps it.
export async function endProfiling(id) {
  await sessions.get(id)?.endProfiling();
}

export async function release(id) {
  const session = sessions.get(id);
  sessions.delete(id);
  if (session) await session.release();
}
