// One worker per browser runtime, created on first use; calls are promises.
import { threadsFor } from "./probe.js";

const workers = new Map();

// The runtimes checks and benchmarks compare: WebAssembly with all the page's threads,
// with one, and WebGPU. `init` takes the bundle ("wasm" or "webgpu") and a thread count.
const BUNDLE = Object.freeze({ wasm: "wasm", "wasm-1t": "wasm", webgpu: "webgpu" });

export function initArgs(runtime, device) {
  return { runtime: BUNDLE[runtime], threads: runtime === "wasm" ? threadsFor(device) : 1 };
}

class RuntimeWorker {
  constructor(runtime) {
    this.runtime = runtime;
    this.worker = new Worker("/web/worker.js", { type: "module", name: `onnxport-${runtime}` });
    this.pending = new Map();
    this.next = 1;
    this.worker.onmessage = ({ data }) => {
      const call = this.pending.get(data.id);
      this.pending.delete(data.id);
      if (data.ok) call.resolve(data.result);
      else call.reject(new Error(data.error));
    };
    this.worker.onerror = (event) => {
      const error = new Error(`${runtime} worker failed: ${event.message || "script error"}`);
      for (const call of this.pending.values()) call.reject(error);
      this.pending.clear();
    };
  }

  call(op, args = {}, transfer = []) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, op, ...args }, transfer);
    });
  }

  terminate() {
    this.worker.terminate();
  }
}

export function workerFor(runtime) {
  if (!workers.has(runtime)) workers.set(runtime, new RuntimeWorker(runtime));
  return workers.get(runtime);
}

export function dropWorker(runtime) {
  workers.get(runtime)?.terminate();
  workers.delete(runtime);
}
