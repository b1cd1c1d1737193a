// Workers that own onnxruntime-web sessions, created on first use; calls are promises.
import { browserRuntime, placed } from "../choice/runtimes.js";
import { CORS_HINT } from "../files/cors.js";

// This module's URL, kept out of the `new URL(path literal, import.meta.url)` form where a bundler would
// take it for a file to copy (see startWorker).
const HERE = import.meta.url;
const workers = new Map();

// What a worker's init needs for a browser runtime (runtimes.js): the onnxruntime-web execution
// provider and bundle to load, and its threads on this device.
export function initArgs(runtime, device) {
  const { provider, bundle } = browserRuntime(runtime);
  return { runtime: provider, bundle, threads: placed(runtime, device).threads };
}

// A page on another origin cannot start a worker from our URL directly; a module worker
// made from a blob that imports ours can (its imports are fetched with CORS).
// The same-origin call is written in the one form bundlers recognise (Vite, webpack 5, Parcel):
// `new Worker(new URL(<a literal path>, import.meta.url), { type: "module" })`. A page built from the
// npm package then gets worker.js and ort-runtime.js bundled as a worker of its own, and nothing of
// onnxruntime-web: ort-runtime.js imports that at run time from the server's URL.
function startWorker(name) {
  if (new URL(HERE).origin === self.location.origin)
    return new Worker(new URL("../worker/worker.js", import.meta.url), { type: "module", name });
  const source = `import ${JSON.stringify(new URL("../worker/worker.js", HERE).href)};`;
  const blob = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  return new Worker(blob, { type: "module", name });
}

class RuntimeWorker {
  constructor(name) {
    this.worker = startWorker(`onnxport-${name}`);
    this.pending = new Map();
    this.next = 1;
    this.sessions = 0; // open sessions (session.js counts them): a worker without any may be dropped
    this.worker.onmessage = ({ data }) => {
      const call = this.pending.get(data.id);
      this.pending.delete(data.id);
      if (data.ok) call.resolve(data.result);
      else call.reject(new Error(data.error));
    };
    this.worker.onerror = (event) => {
      const error = new Error(`${name} worker failed: ${event.message || `script error (${CORS_HINT})`}`);
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
    const error = new Error("the worker was stopped");
    for (const call of this.pending.values()) call.reject(error);
    this.pending.clear();
  }
}

export function workerFor(name) {
  if (!workers.has(name)) workers.set(name, new RuntimeWorker(name));
  return workers.get(name);
}

export function dropWorker(name) {
  workers.get(name)?.terminate();
  workers.delete(name);
}

// A worker that holds no session (its memory, its threads) is stopped; the next use starts it again.
export function dropIdleWorker(name) {
  if (workers.get(name)?.sessions === 0) dropWorker(name);
}

export function dropAllWorkers() {
  for (const name of [...workers.keys()]) dropWorker(name);
}
