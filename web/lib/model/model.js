// A loaded model: run(feeds) on the runtime the plan chose, what was chosen and why, dispose(). Its session is a
// worker's (session.js) or the server's (server-session.js): the same run, runPipeline and release.
import { recordRun } from "../remembered/speeds.js";
import { asBatch } from "../pipelines/pipeline.js";

/** @import { Choice } from "../types.js" */
/** @import { Tensors } from "../tensors/tensors.js" */
/** @import { PipelineResult, openPipeline } from "../pipelines/pipeline.js" */
/** @typedef {import("./session.js").Session | import("./server-session.js").ServerSession} AnySession */

/**
 * What run() returns: the outputs by name, and the run's time (in the worker; on the server, the
 * request's round trip).
 * @typedef {{outputs: Tensors, runMs: number}} RunResult
 */

export class LoadedModel {
  // session: an onnxruntime-web Session, or the server's; choice: see Client.load.
  /**
   * @param {object} args
   * @param {string} args.name
   * @param {import("../files/manifest.js").FileRecord} args.record the file that was loaded
   * @param {AnySession} args.session
   * @param {Omit<Choice, "attempts" | "plan">} args.choice (Client.load adds its attempts and plan)
   * @param {() => void} [args.onDispose]
   * @param {() => ReturnType<typeof openPipeline>} [args.pipeline] the model's pipeline, opened on first use
   */
  constructor({ name, record, session, choice, onDispose, pipeline }) {
    this.name = name;
    this.record = record;
    this.session = session;
    /** Where it runs and why. */
    this.choice = /** @type {Choice} */ (choice);
    this.onDispose = onDispose;
    this.disposed = false;
    this.openPipeline = pipeline;
    /** @type {Promise<unknown>} */
    this.queue = Promise.resolve();
    /**
     * The thread trial a first load with threads starts after it (threads.js), or null: it resolves (never
     * rejects) when the model runs on the measured thread count, to {threads, why}.
     * @type {Promise<{threads: number, why: string}> | null}
     */
    this.threadTrial = null;
  }

  /**
   * Runs `work` after the runs and trial steps queued before it, one at a time: a thread trial's timings are not
   * taken while a run of the page's competes with them, and a session is swapped between runs, never during one.
   * @template T
   * @param {() => Promise<T>} work
   * @returns {Promise<T>}
   */
  exclusive(work) {
    const turn = this.queue.then(work);
    this.queue = turn.catch(() => {});
    return turn;
  }

  /**
   * From now on, run on `session` (a thread trial found it faster): the choice says so. The caller releases
   * the session it replaces. Call it inside exclusive().
   * @param {import("./session.js").Session} session
   * @param {Partial<Choice>} changes
   */
  adopt(session, changes) {
    this.session = session;
    this.choice = { ...this.choice, ...changes, threads: session.info.threads, createMs: session.createMs };
  }

  /**
   * Raw input in, the answer out, by the model's own pipeline (its manifest entry's `pipeline`): text, a list
   * of texts, pairs for a pair model, or images (a Blob such as a File, an ImageBitmap, an <img> or a canvas).
   * Preprocessing runs where the session says: here, with the model where load() placed it; on the server, the
   * raw input goes as it is.
   * @param {import("../pipelines/pipeline.js").RawInput | import("../pipelines/pipeline.js").RawInput[]} input
   * @returns {Promise<PipelineResult>}
   */
  async pipeline(input) {
    if (!this.openPipeline) throw new Error(`${this.name} has no pipeline: give it tensors with run(feeds)`);
    const pipeline = await this.openPipeline();
    return this.session.runPipeline(pipeline, asBatch(input, pipeline.spec), (feeds) => this.run(feeds));
  }

  // feeds: {inputName: {type, dims, data}} -> {outputs: {name: {type, dims, data}}, runMs}
  /** @param {Tensors} feeds @returns {Promise<RunResult>} */
  async run(feeds) {
    this.#usable();
    // The server takes concurrent requests and is not this browser's speed; a session here runs in the model's
    // turn (a thread trial swaps sessions between runs, never during one), its times remembered (speeds.js).
    if (this.session.concurrent) return this.session.run(feeds);
    return this.exclusive(async () => {
      this.#usable();
      const first = this.session.runs === 0;
      const result = await this.session.run(feeds);
      recordRun(this.record.sha256, this.choice.key, result.runMs, first);
      return result;
    });
  }

  #usable() {
    if (this.disposed) throw new Error(`${this.name} was disposed; load it again`);
  }

  /** Releases its session (and its worker's memory); run() refuses afterwards. @returns {Promise<void>} */
  async dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.onDispose?.();
    await this.exclusive(async () => this.session.release()); // after the run in flight; a trial sees `disposed`
  }
}
