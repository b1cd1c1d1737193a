// A loaded model: run(feeds) on the runtime the plan chose, what was chosen and why, dispose().
import { asBatch } from "./pipeline.js";
import { imageBlob } from "./image-pipeline.js";
import { serverInfer, serverPipeline } from "./server-api.js";
import { recordRun } from "./speeds.js";

/** @import { Choice } from "./client.js" */
/** @import { Tensors } from "./tensors.js" */
/** @import { PipelineResult, openPipeline } from "./pipeline.js" */

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
   * @param {() => ReturnType<typeof openPipeline>} [args.pipeline] the model's pipeline, opened on first use
   */
  constructor({ name, base, record, session, choice, onDispose, pipeline }) {
    this.name = name;
    this.base = base;
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
   * Preprocessing runs here, the model where load() placed it.
   * @param {import("./pipeline.js").RawInput | import("./pipeline.js").RawInput[]} input
   * @returns {Promise<PipelineResult>}
   */
  async pipeline(input) {
    if (!this.openPipeline) throw new Error(`${this.name} has no pipeline: give it tensors with run(feeds)`);
    const pipeline = await this.openPipeline();
    if (!this.session) {
      // On the server, raw input goes as it is: the server runs the Python side of the same spec.
      const kind = pipeline.spec.image ? "image" : "text";
      const inputs = asBatch(input, pipeline.spec);
      const started = performance.now();
      const sent = kind === "image" ? await Promise.all(inputs.map((i) => imageBlob(/** @type {any} */ (i)))) : inputs;
      const preprocessMs = performance.now() - started;
      const { answers, outputs, runMs } = await serverPipeline(this.base, this.name, this.choice.variant, kind, /** @type {any} */ (sent));
      return { answer: answers[0], answers, feeds: {}, outputs, timings: { preprocessMs, runMs, answerMs: 0 } };
    }
    const started = performance.now();
    const feeds = await pipeline.encode(asBatch(input, pipeline.spec));
    const preprocessMs = performance.now() - started;
    const { outputs, runMs } = await this.run(feeds);
    const answering = performance.now();
    const answers = pipeline.answers(outputs, feeds);
    return { answer: answers[0], answers, feeds, outputs, timings: { preprocessMs, runMs, answerMs: performance.now() - answering } };
  }

  // feeds: {inputName: {type, dims, data}} -> {outputs: {name: {type, dims, data}}, runMs}
  /** @param {Tensors} feeds @returns {Promise<RunResult>} */
  async run(feeds) {
    if (this.disposed) throw new Error(`${this.name} was disposed; load it again`);
    if (!this.session) return serverInfer(this.base, this.name, this.choice.variant, feeds);
    return this.exclusive(async () => {
      if (this.disposed) throw new Error(`${this.name} was disposed; load it again`);
      const first = this.session.runs === 0;
      const result = await this.session.run(feeds);
      recordRun(this.record.sha256, this.choice.key, result.runMs, first);
      return result;
    });
  }

  /** Releases its session (and its worker's memory); run() refuses afterwards. @returns {Promise<void>} */
  async dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.onDispose?.();
    await this.exclusive(async () => this.session?.release()); // after the run in flight; a trial sees `disposed`
  }
}
