// The server as a session: the same run(feeds), runPipeline and release as a worker's session (session.js), over
// the V2 API, so a loaded model runs one way wherever the plan placed it.
import { serverInfer, serverPipeline } from "../tensors/server-api.js";

/** @import { Tensors } from "../tensors/tensors.js" */
/** @import { PipelineResult } from "../pipelines/pipeline.js" */

export class ServerSession {
  // The server takes concurrent requests (and may batch them): runs need not wait their turn.
  concurrent = true;

  /**
   * @param {string} base the V2 API's base URL
   * @param {string} model the model's name
   * @param {string} variant
   * @param {string} runtime the server's runtime key (runtimes.js)
   */
  constructor(base, model, variant, runtime) {
    this.base = base;
    this.model = model;
    this.variant = variant;
    this.info = { runtime, version: null, threads: null };
    this.createMs = null;
    this.runs = 0;
  }

  /** @param {Tensors} feeds @returns {Promise<{outputs: Tensors, runMs: number}>} the request's round trip */
  async run(feeds) {
    const result = await serverInfer(this.base, this.model, this.variant, feeds);
    this.runs += 1;
    return result;
  }

  /**
   * Raw input goes as it is: the server runs the Python side of the same pipeline spec (no feeds are made here).
   * @param {{raw: (inputs: any[]) => Promise<{name: string, datatype: "BYTES", shape: number[], data: string[]}>}} pipeline
   * @param {any[]} inputs
   * @returns {Promise<PipelineResult>}
   */
  async runPipeline(pipeline, inputs) {
    const started = performance.now();
    const input = await pipeline.raw(inputs);
    const preprocessMs = performance.now() - started;
    const { answers, outputs, runMs } = await serverPipeline(this.base, this.model, this.variant, input);
    this.runs += 1;
    return { answer: answers[0], answers, feeds: {}, outputs, timings: { preprocessMs, runMs, answerMs: 0 } };
  }

  /** Nothing to release: the server keeps its sessions. @returns {Promise<void>} */
  async release() {}
}
