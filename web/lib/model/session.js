// The one code path that creates onnxruntime-web sessions: the library's models, the
// conformance check, the bench, the operator profile and `--locate` debug runs all open here.
import { initArgs, workerFor } from "./workers.js";

/**
 * How to start a runtime: its key (runtimes.js), this device, onnxruntime-web's files, the worker's name.
 * @typedef {object} RuntimeOptions
 * @property {string} runtime a browser runtime key
 * @property {import("../choice/probe.js").Device} device
 * @property {string} ortBase the absolute URL of onnxruntime-web's dist folder
 * @property {string} [worker] the worker's name (default: the runtime's)
 * @property {boolean} [verbose]
 * @property {string|false} [perturb] tests only: the perturbation mode (ort-runtime.js)
 */

export class SessionError extends Error {
  /** @param {string} message @param {"init"|"create"} stage */
  constructor(message, stage) {
    super(message);
    this.stage = stage; // "init": the runtime itself failed; "create": it refused this model
  }
}

// Starts a runtime's worker and backend (onnxruntime-web, its .wasm, its threads) without a
// model, so a caller can do it while the model's bytes are still being read; openSession
// then finds it started. Resolves to {runtime, version, threads, initMs}.
/** @param {RuntimeOptions} options */
export function startRuntime({ runtime, device, ortBase, worker = runtime, verbose = false, perturb = false }) {
  const owner = workerFor(worker);
  return owner.call("init", { ...initArgs(runtime, device), ortBase, verbose, perturb }).catch((error) => {
    throw new SessionError(`${runtime} could not start: ${error.message}`, "init");
  });
}

// runtime: a browser runtime of runtimes.js. worker: the worker's name (sessions of one
// runtime share a worker unless a caller needs its own, e.g. a fresh start for the bench).
/** @param {RuntimeOptions & {bytes: ArrayBuffer, profile?: boolean}} options @returns {Promise<Session>} */
export async function openSession({
  bytes,
  runtime,
  device,
  ortBase,
  worker = runtime,
  verbose = false,
  profile = false,
  perturb = false,
}) {
  const owner = workerFor(worker);
  const info = await startRuntime({ runtime, device, ortBase, worker, verbose, perturb });
  if (verbose) await owner.call("logs"); // the log starts afresh with this session
  let created;
  try {
    created = await owner.call("create", { bytes, verbose, profile }, [bytes]);
  } catch (error) {
    // onnxruntime-web starts its backend with the first session: a backend that cannot start
    // (its .wasm blocked, no GPU device) fails every model, not just this one.
    throw new SessionError(error.message, /no available backend found/.test(error.message) ? "init" : "create");
  }
  const logs = verbose ? await owner.call("logs") : [];
  owner.sessions += 1;
  return new Session(owner, created.id, info, created.createMs, logs);
}

// A session in a worker. ServerSession (server-session.js) has the same run, runPipeline and release.
export class Session {
  // Its runs take turns: a worker runs one at a time, and a loaded model swaps sessions between runs.
  concurrent = false;

  constructor(owner, id, info, createMs, logs) {
    this.owner = owner;
    this.id = id;
    this.info = info; // {runtime, version, threads}
    this.createMs = createMs;
    this.logs = logs; // onnxruntime-web's verbose session log, when asked for
    this.runs = 0;
    this.released = false;
  }

  async run(feeds) {
    const result = await this.owner.call("run", { session: this.id, feeds });
    this.runs += 1;
    return result;
  }

  /**
   * Raw input to answers: preprocessed in this page, the model run by `run` (the loaded model's run, in its turn).
   * @param {{answer: (inputs: any[], run: (feeds: any) => Promise<any>) => Promise<any>}} pipeline pipeline.js openPipeline
   * @param {any[]} inputs @param {(feeds: any) => Promise<any>} run
   */
  runPipeline(pipeline, inputs, run) {
    return pipeline.answer(inputs, run);
  }

  // The worker's console lines since the last call (onnxruntime's profile and verbose logs).
  takeLogs() {
    return this.owner.call("logs");
  }

  async endProfiling() {
    await this.owner.call("endProfiling", { session: this.id });
    return this.takeLogs();
  }

  async release() {
    if (this.released) return;
    this.released = true;
    this.owner.sessions -= 1;
    await this.owner.call("release", { session: this.id }).catch(() => {});
  }
}
