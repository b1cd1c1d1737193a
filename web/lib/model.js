// A loaded model: run(feeds) on the runtime the plan chose, what was chosen and why, dispose().
import { serverInfer } from "./server-api.js";
import { recordRun } from "./speeds.js";

/** @import { Choice } from "./client.js" */
/** @import { Tensors } from "./tensors.js" */

/**
 * What run() returns: the outputs by name, and the run's time (in the worker; on the server, the
 * request's round trip).
 * @typedef {{outputs: Tensors, runMs: number}} RunResult
 */

export class LoadedModel {
  // session: an onnxruntime-web Session, or null on the server; choice: see Client.load.
  /**
   * @param {object} args
   * @param {string} args.name
   * @param {string} args.base the V2 API's base URL (the server fallback)
   * @param {import("./manifest.js").FileRecord} args.record the file that was loaded
   * @param {import("./session.js").Session|null} args.session
   * @param {Omit<Choice, "attempts" | "plan">} args.choice (Client.load adds its attempts and plan)
   * @param {() => void} [args.onDispose]
   */
  constructor({ name, base, record, session, choice, onDispose }) {
    this.name = name;
    this.base = base;
    this.record = record;
    this.session = session;
    /** Where it runs and why. */
    this.choice = /** @type {Choice} */ (choice);
    this.onDispose = onDispose;
    this.disposed = false;
  }

  // feeds: {inputName: {type, dims, data}} -> {outputs: {name: {type, dims, data}}, runMs}
  /** @param {Tensors} feeds @returns {Promise<RunResult>} */
  async run(feeds) {
    if (this.disposed) throw new Error(`${this.name} was disposed; load it again`);
    if (!this.session) return serverInfer(this.base, this.name, this.choice.variant, feeds);
    const first = this.session.runs === 0;
    const result = await this.session.run(feeds);
    recordRun(this.record.sha256, this.choice.key, result.runMs, first);
    return result;
  }

  /** Releases its session (and its worker's memory); run() refuses afterwards. @returns {Promise<void>} */
  async dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.onDispose?.();
    await this.session?.release();
  }
}
