// A connection to one onnxport server: its manifest, files and API, and load(model), which
// plans, downloads, verifies on first use and falls back step by step.
import { fetchFailed } from "./cors.js";
import { cachedUrls, loadArtifact, sha256 } from "./downloads.js";
import { fileRecord } from "./forms.js";
import { arithmeticOf, judgementRule } from "./judge.js";
import { checkManifest } from "./manifest.js";
import { LoadedModel } from "./model.js";
import { openPipeline } from "./pipeline.js";
import { buildPlan } from "./plan.js";
import { probe } from "./probe.js";
import { inBrowser, PINNABLE, runtime as runtimeRow } from "./runtimes.js";
import { openSession, SessionError, startRuntime } from "./session.js";
import { decodeTensors } from "./tensors.js";
import { decide, rememberTrial, trialRuns } from "./threads.js";
import { remember, remembered } from "./verdicts.js";
import { engineError, lastingFailure, verifySession, wrongResultsMessage } from "./verify.js";
import { dropAllWorkers, dropIdleWorker } from "./workers.js";

/** @import { ModelEntry, VariantRecord } from "./manifest.js" */
/** @import { Tensors } from "./tensors.js" */

/**
 * Where a client finds what it does not take from the server itself.
 * @typedef {object} ClientOptions
 * @property {string|URL|null} [files] where the repository's files are served, if not by the server (a CDN)
 * @property {string|URL|null} [inference] the V2 API's base URL for the server fallback and references, if
 *   not the server (a Ray Serve or Triton endpoint: it must serve the same models under the same names)
 * @property {{perturb?: string}} [testing] automated tests only (refused without navigator.webdriver):
 *   perturb "RUNTIME" adds 1 to the first element of each float output (the size of int8 rounding
 *   differences between builds: an fp32 file fails its floor, an int8 file may stay within budget),
 *   "RUNTIME:negate" negates every float value too (wrong by every rule)
 */
/**
 * One step of a load plan: a runtime, a variant and the file to load (form null: the variant as built).
 * @typedef {object} PlanStep
 * @property {string} runtime one of RUNTIMES
 * @property {string} key the runtime key the tolerances and verdicts use (runtimes.js: WebAssembly on one thread has its own)
 * @property {string} variant
 * @property {string|null} form
 * @property {string} why the reason it is where it is in the plan, in words
 * @property {number} [threads]
 * @property {{key: string, threads: number}|null} [trial] WebAssembly's page threads, to be measured against
 *   this step's one thread on this load (threads.js)
 * @property {string|null} [threadsWhy] the part of `why` that says why this many threads
 * @property {number|null} [expectedMs] the expected warm run plus the download: null while the download's time is
 *   unknown (no download from the file's origin measured in this browser yet; `why` says so)
 * @property {number} [rankMs] what the plan orders steps by: expectedMs, an unknown download weighed at 10 Mbit/s
 */
/**
 * A load plan: the steps load() tries in order, and what was left out and why.
 * @typedef {{steps: PlanStep[], skipped: Array<{runtime: string, variant?: string, reason: string}>}} Plan
 */
/**
 * What load() may be told: pins, the verification mode and progress hooks.
 * @typedef {object} LoadOptions
 * @property {string} [runtime] load on this runtime only (one of RUNTIMES: WebGPU, WebNN, WebAssembly, the server)
 * @property {string} [variant] load this variant only ("fp32", "fp16", "int8-dynamic", "int8-static")
 * @property {string} [form] load this optimized form of the pinned variant (docs/manifest.md)
 * @property {"first-use"|"always"|"off"} [verify] check the runtime's outputs against the server's reference
 *   outputs before the first use on this device (default), before every load, or never
 * @property {(received: number, total: number, source: string) => void} [onProgress] bytes of the model
 *   file read so far; source "network" or "cache"
 * @property {(step: PlanStep) => void} [onStep] a step is being tried
 * @property {(step: PlanStep, error: Error) => void} [onFailure] a step failed; the next one is tried
 * @property {(text: string) => void} [onNote] something worth telling a user (a damaged cache entry, ...)
 */
/**
 * Where a loaded model runs and why (LoadedModel.choice).
 * @typedef {object} Choice
 * @property {string} runtime one of RUNTIMES
 * @property {string} key the runtime key (runtimes.js: WebAssembly on one thread has its own)
 * @property {string} variant
 * @property {string|null} form
 * @property {string} why
 * @property {number|null} threads onnxruntime-web's WebAssembly threads (null on the server)
 * @property {{status: string, [field: string]: any}} verification status "passed", "remembered",
 *   "reference" (the server), "off" or "unavailable", with the measured differences
 * @property {string} [source] where the model's bytes came from: "network" or "cache"
 * @property {number} [createMs] the session's creation time
 * @property {Array<{runtime: string, variant: string, form: string|null, error: string, wrong: boolean}>} attempts
 *   the steps that failed before this one
 * @property {Plan} plan
 */

// The onnxruntime-web release our server ships (package.json pins it; a test keeps them equal).
export const ORT_WEB_VERSION = "1.30.0";
const VERIFY_MODES = Object.freeze(["first-use", "always", "off"]);
// This file is served at <server>/web/lib/client.js. (A bundled page has no such place: it passes
// the server's URL. import.meta.url stays out of the `new URL(path literal, import.meta.url)` form, which
// bundlers read as a file to copy.)
const HERE = import.meta.url;
const DEFAULT_BASE = new URL("../../", HERE).href;

/** Every step of the plan failed: `attempts` says how each one did. */
export class LoadError extends Error {
  /**
   * @param {string} message
   * @param {Choice["attempts"]} attempts
   */
  constructor(message, attempts) {
    super(message);
    this.attempts = attempts;
  }
}

/**
 * A client of the onnxport server at baseUrl (by default the server this file came from; a page
 * built with a bundler passes its server's URL).
 * @param {string|URL} [baseUrl]
 * @param {ClientOptions} [options]
 * @returns {Client}
 */
export function connect(baseUrl = DEFAULT_BASE, options = {}) {
  return new Client(baseUrl, options);
}

export class Client {
  /**
   * @param {string|URL} baseUrl the server
   * @param {ClientOptions} [options] files (a CDN), inference (another V2 endpoint), testing
   */
  constructor(baseUrl, { files = null, inference = null, testing = {} } = {}) {
    const folder = (url) => new URL(url, globalThis.location?.href).href.replace(/\/?$/, "/");
    this.base = folder(baseUrl);
    this.files = files ? folder(files) : new URL("repository/", this.base).href;
    this.inference = inference ? folder(inference) : this.base;
    if (testing.perturb && globalThis.navigator?.webdriver !== true) {
      throw new Error("testing.perturb makes a runtime give wrong answers: refused outside automated tests (navigator.webdriver is not set)");
    }
    const [target, mode = "nudge"] = (testing.perturb ?? "").split(":");
    this.perturb = target ? { target, mode } : null;
    this.cache = new Map(); // url -> promise of JSON, for the API's small documents
    this.loaded = new Set();
    this.references = new Map(); // reference file url -> promise of its tensors
    this.pipelines = new Map(); // model name -> promise of its opened pipeline (tokenizer files read once)
  }

  /** @param {string} path a path under the server's URL @returns {string} */
  url(path) {
    return new URL(path, this.base).href;
  }

  /** @param {string} relative a repository file's path (the manifest's `file`) @returns {string} */
  fileUrl(relative) {
    return new URL(relative, this.files).href;
  }

  /** Where onnxruntime-web's files are served: the server's own copy of the release it pins. */
  get ortBase() {
    return this.url("ort/");
  }

  /** @returns {Promise<import("./manifest.js").Manifest>} the server's manifest, read once */
  manifest() {
    return this.#json("api/manifest", { required: true }).then((body) => checkManifest(body, this.url("api/manifest")));
  }

  /** @param {string} name @returns {Promise<ModelEntry>} the manifest's entry of a model */
  async model(name) {
    const built = await this.manifest();
    const model = built.models[name];
    if (!model) throw new Error(`no model ${JSON.stringify(name)} on ${this.base}; models: ${Object.keys(built.models).join(", ") || "none"}`);
    return model;
  }

  /** @returns {Promise<import("./probe.js").Device>} what this browser can do (probed once per page) */
  device() {
    return probe();
  }

  /** @returns {Promise<Record<string, import("./judge.js").Tolerance>>} the server's tolerance table ("variant/key") */
  tolerances() {
    return this.#json("api/tolerances", { required: true });
  }

  bench() {
    return this.#json("api/bench");
  }

  conformance() {
    return this.#json("api/conformance");
  }

  // Golden sets as [{inputs, outputs}] of decoded tensors.
  /** @param {string} name @returns {Promise<Array<{inputs: Tensors, outputs: Tensors}>>} */
  async golden(name) {
    const body = await this.#json(`api/models/${encodeURIComponent(name)}/golden`, { required: true });
    return body.sets.map((set) => ({ inputs: decodeTensors(set.inputs), outputs: decodeTensors(set.outputs) }));
  }

  // The variant's reference file (inputs and native onnxruntime's outputs), sha256-checked;
  // read once per client (several runtimes may verify one artifact).
  /**
   * @param {VariantRecord} record
   * @returns {Promise<{inputs: Tensors, outputs: Tensors, bytes: number} | null>} null when the record has no reference
   */
  reference(record) {
    if (!record.reference) return Promise.resolve(null);
    const url = this.fileUrl(record.reference.file);
    if (!this.references.has(url)) {
      const loading = fetch(url).then(async (response) => {
        if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
        const bytes = await response.arrayBuffer();
        if ((await sha256(bytes)) !== record.reference.sha256) throw new Error(`${record.reference.file}: sha256 does not match the manifest's`);
        const body = JSON.parse(new TextDecoder().decode(bytes));
        return { inputs: decodeTensors(body.inputs), outputs: decodeTensors(body.outputs), bytes: bytes.byteLength };
      });
      loading.catch(() => this.references.delete(url));
      this.references.set(url, loading);
    }
    return this.references.get(url);
  }

  /**
   * The plan load() would follow on this device, without loading anything.
   * @param {string} name
   * @param {Pick<LoadOptions, "runtime" | "variant" | "form" | "verify">} [pins]
   * @returns {Promise<Plan>}
   */
  async plan(name, { runtime = "", variant = "", form = "", verify = "first-use" } = {}) {
    const [model, device, bench, conformance, cached] = await Promise.all([
      this.model(name), probe(), this.bench(), this.conformance(), cachedUrls(),
    ]);
    return buildPlan(model, device, {
      pin: { runtime, variant, form }, bench, conformance, cached, verify, ortVersion: ORT_WEB_VERSION,
      fileUrl: (file) => this.fileUrl(file),
    });
  }

  // An artifact's bytes (verified, cached) and a session for it: the conformance check,
  // the bench and the library's own models all start here.
  // The runtime starts (worker, .wasm, threads) while the bytes are read, not after.
  /**
   * @param {import("./manifest.js").FileRecord} record
   * @param {string} runtime a runtime key
   * @param {{worker?: string, verbose?: boolean, profile?: boolean, onProgress?: LoadOptions["onProgress"], spare?: boolean}} [options]
   *   spare: also return a copy of the bytes (`spare`), for a second session of the same file
   */
  async session(record, runtime, { worker, verbose = false, profile = false, onProgress, spare = false } = {}) {
    const started = performance.now();
    const options = await this.#runtimeOptions(runtime, { worker, verbose });
    const starting = startRuntime(options);
    starting.catch(() => {}); // awaited below, after the bytes; a failure is reported there
    const loaded = await loadArtifact(this.fileUrl(record.file), record, onProgress);
    const loadMs = performance.now() - started;
    const { initMs } = await starting;
    const readyMs = performance.now() - started;
    // The worker takes the bytes (transferred): a thread trial opens a second session from a copy.
    const copy = spare ? loaded.bytes.slice(0) : null;
    const session = await openSession({ ...options, bytes: loaded.bytes, profile });
    const stages = { load_ms: loadMs, download_ms: loaded.networkMs, verify_ms: loaded.verifyMs, init_ms: initMs, ready_ms: readyMs };
    return { session, source: loaded.source, notes: loaded.notes, loadMs, stages, spare: copy };
  }

  // Starts the runtime the plan would try first for this model (worker, .wasm, threads: 150 to
  // 300 ms on a 2-core machine) without loading the model, so that a later load() finds it
  // started: call it when the page opens, before anyone asks for a result. Resolves to the
  // runtime's {runtime, version, threads, initMs}, or null when the plan starts on the server.
  /**
   * @param {string} name
   * @param {Pick<LoadOptions, "runtime" | "variant">} [pins]
   * @returns {Promise<{runtime: string, version: string|null, threads: number, initMs: number} | null>}
   */
  async startAhead(name, { runtime = "", variant = "" } = {}) {
    const { steps } = await this.plan(name, { runtime, variant });
    const step = steps.find((s) => inBrowser(s.runtime));
    return step ? this.startRuntime(step.key) : null;
  }

  // startAhead's former name ("prepared" is the Python side's word for a loaded source model), kept
  // for pages written against it.
  /**
   * @deprecated startAhead
   * @param {string} name
   * @param {Pick<LoadOptions, "runtime" | "variant">} [options]
   */
  prepare(name, options) {
    return this.startAhead(name, options);
  }

  // One runtime started ahead (the bench times a start after it, as a page that called startAhead).
  /** @param {string} runtime a runtime key @param {{worker?: string}} [options] */
  async startRuntime(runtime, { worker } = {}) {
    return startRuntime(await this.#runtimeOptions(runtime, { worker }));
  }

  /**
   * @param {string} runtime
   * @param {{worker?: string, verbose?: boolean}} options
   * @returns {Promise<import("./session.js").RuntimeOptions>}
   */
  async #runtimeOptions(runtime, { worker, verbose = false }) {
    return {
      runtime, device: await probe(), ortBase: this.ortBase, worker, verbose,
      // A target names a key (wasm-1t) or the runtime a user pins (wasm: either thread count).
      perturb: this.perturb && (this.perturb.target === runtime || this.perturb.target === runtimeRow(runtime)?.runtime)
        ? this.perturb.mode : false,
    };
  }

  // options: runtime / variant (pins), verify: first-use | always | off, and hooks
  // onProgress(received, total, source), onStep(step), onFailure(step, error), onNote(text).
  /**
   * Loads a model where it runs best on this device, verified, falling back step by step.
   * @param {string} name the model's name on the server
   * @param {LoadOptions} [options]
   * @returns {Promise<LoadedModel>} its run(feeds) and its choice (where it runs and why)
   * @throws {LoadError} when every step of the plan failed
   */
  async load(name, options = {}) {
    const verify = options.verify ?? "first-use";
    if (!VERIFY_MODES.includes(verify)) throw new Error(`verify must be one of ${VERIFY_MODES.join(", ")}, got ${JSON.stringify(verify)}`);
    const model = await this.model(name);
    const plan = await this.plan(name, { ...options, verify });
    const attempts = [];
    const brokenRuntimes = new Set();
    for (const step of plan.steps) { // a form's step is followed by its variant as built (plan.js)
      if (brokenRuntimes.has(step.key)) continue;
      options.onStep?.(step);
      try {
        const loaded = await this.#open(model, step, verify, options);
        loaded.choice = { ...loaded.choice, why: withUnavailable(loaded.choice, plan), attempts, plan };
        return loaded;
      } catch (error) {
        if (error.stage === "init") brokenRuntimes.add(step.key); // the runtime, not this model, failed
        attempts.push({ runtime: step.runtime, variant: step.variant, form: step.form ?? null, error: error.message, wrong: Boolean(error.wrong) });
        options.onFailure?.(step, error);
      }
    }
    const reasons = attempts.map((a) => `${a.runtime}/${a.variant}${a.form ? ` (${a.form} form)` : ""}: ${a.error}`).join("; ");
    throw new LoadError(`every runtime failed for ${name}: ${reasons || "the plan is empty"}`, attempts);
  }

  /**
   * @param {ModelEntry} model
   * @param {PlanStep} step
   * @param {LoadOptions["verify"]} verify
   * @param {LoadOptions} options
   * @returns {Promise<LoadedModel>}
   */
  async #open(model, step, verify, options) {
    const record = fileRecord(model.variants[step.variant], step.form ?? null); // the variant itself unless a form
    if (!inBrowser(step.runtime)) {
      return new LoadedModel({ name: model.name, base: this.inference, record, session: null, choice: choiceOf(step, { status: "reference" }, null),
        pipeline: this.#pipelineOf(model) });
    }
    let opened;
    try {
      opened = await this.session(record, step.key, { onProgress: options.onProgress, spare: Boolean(step.trial) });
    } catch (error) {
      // The engine refused this file (not the runtime failing to start, nor a download): a verdict to remember.
      if (error instanceof SessionError && error.stage === "create") throw await this.#failed(step, record, null, error);
      throw error;
    }
    const { session, source, notes, spare } = opened;
    for (const note of notes) options.onNote?.(note);
    let verification;
    try {
      verification = await this.#verify(model, step, record, session, verify);
    } catch (error) {
      await session.release();
      throw error;
    }
    const loaded = new LoadedModel({
      name: model.name, base: this.inference, record, session,
      choice: { ...choiceOf(step, verification, session), source, createMs: session.createMs },
      onDispose: () => this.loaded.delete(loaded),
      pipeline: this.#pipelineOf(model),
    });
    this.loaded.add(loaded);
    if (step.trial) loaded.threadTrial = this.#threadTrial(model, step, record, verify, loaded, { spare, onNote: options.onNote });
    return loaded;
  }

  // The step's thread trial (threads.js), after load() returned the model on one thread, so that a first load is
  // not slower for it: a session on the page's N threads, verified like the first, then timed against it on the
  // reference inputs, each run in the model's turn (LoadedModel.exclusive). The model moves to N threads only when
  // they are 10% faster; the loser's session and worker are released and the trial remembered. A trial that
  // cannot run keeps the one thread and says why. Never rejects.
  async #threadTrial(model, step, record, verify, loaded, { spare, onNote }) {
    const many = { ...step, key: step.trial.key, threads: step.trial.threads, trial: null };
    const device = await probe();
    const sha256 = model.variants[step.variant].sha256;
    const settle = (threadsWhy) => ({ why: loaded.choice.why.replace(step.threadsWhy, threadsWhy) });
    const stopped = () => { if (loaded.disposed) throw new Error("the model was disposed"); };
    let other = null;
    try {
      // Its runtime starts now, not beside the load: on 2 cores, a second .wasm compiled at once slowed the load.
      stopped();
      other = await openSession({ ...(await this.#runtimeOptions(many.key, {})), bytes: spare });
      const verification = await loaded.exclusive(() => { stopped(); return this.#verify(model, many, record, other, verify); });
      const reference = await this.reference(record);
      if (!reference) throw new Error("the manifest has no reference inputs to time them on");
      const measured = await trialRuns({ single: loaded.session, many: other, inputs: reference.inputs, sha256,
        keys: { single: step.key, many: many.key }, turn: (work) => loaded.exclusive(() => { stopped(); return work(); }) });
      rememberTrial(device, { ...measured, model: model.name, variant: step.variant, sha256 });
      const verdict = decide(measured.oneMs, measured.manyMs, many.threads);
      const threadsWhy = `${verdict.why} (measured after this load)`;
      const faster = verdict.threads > 1 ? other : null;
      await loaded.exclusive(async () => {
        stopped();
        const replaced = faster ? loaded.session : other;
        if (faster) loaded.adopt(faster, { key: many.key, verification, ...settle(threadsWhy) });
        else loaded.choice = { ...loaded.choice, ...settle(threadsWhy) };
        other = null; // from here the model owns it, or it is released below
        await replaced.release();
        dropIdleWorker(faster ? step.key : many.key); // the losing thread count's worker and memory, unless in use
      });
      return { threads: verdict.threads, why: threadsWhy };
    } catch (error) {
      await other?.release();
      dropIdleWorker(many.key);
      const threadsWhy = `one thread: ${many.threads} threads were not measured (${error.message})`;
      if (!loaded.disposed) {
        loaded.choice = { ...loaded.choice, ...settle(threadsWhy) };
        onNote?.(`${model.name}: ${threadsWhy}`);
      }
      return { threads: 1, why: threadsWhy };
    }
  }

  /**
   * A model's pipeline without running the model: encode(inputs) gives the tensors its spec makes of raw
   * input, answers(outputs, feeds) the answers of its outputs (model.pipeline(input) does both around a run).
   * @param {string} name
   * @returns {ReturnType<typeof openPipeline>}
   */
  async pipeline(name) {
    const model = await this.model(name);
    const open = this.#pipelineOf(model);
    if (!open) throw new Error(`${name} has no pipeline in its manifest entry: it takes tensors only`);
    return open();
  }

  /** The model's pipeline, opened at its first use and then shared (undefined: it has none). */
  #pipelineOf(model) {
    if (!model.pipeline) return undefined;
    return () => {
      if (!this.pipelines.has(model.name)) {
        const opening = openPipeline(this, model);
        opening.catch(() => this.pipelines.delete(model.name)); // a failed download may be tried again
        this.pipelines.set(model.name, opening);
      }
      return this.pipelines.get(model.name);
    };
  }

  async #verify(model, step, record, session, mode) {
    if (mode === "off") return { status: "off" };
    const device = await probe();
    const version = session.info.version ?? ORT_WEB_VERSION;
    if (mode === "first-use") {
      const known = remembered(record.sha256, step.key, version, device);
      if (known?.ok) return { status: "remembered", at: known.at, max_abs: known.max_abs };
    }
    // Judged as the import judged the variant (verify.js, judge.js): by what its file computes; an
    // fp16 or int8 file against the fp32 variant's reference outputs, within its budget.
    const [reference, tolerances, fp32Reference] = await Promise.all([
      this.reference(record), this.tolerances(),
      arithmeticOf(model.variants[step.variant]) === "fp32" ? null : this.reference(model.variants.fp32 ?? {}),
    ]);
    const rule = judgementRule(model, step.variant, step.key, tolerances);
    if (!reference) return { status: "unavailable", reason: "the manifest has no reference outputs for this file (built by an older onnxport)" };
    if (!rule.floor) throw new Error(`no floor for fp32/${step.key} in the server's table`);
    let check;
    try {
      check = await verifySession(session, { model, reference, fp32Reference, rule });
    } catch (error) {
      // An engine's own failure (Firefox's WebGPU on lavapipe: "Failed to create a WebGPU compute pipeline:
      // ShaderModule with 'Clip' label is invalid" at minilm fp16's first run) is remembered like a wrong result.
      throw await this.#failed(step, record, session, error);
    }
    const verdict = { ok: check.ok, reason: check.ok ? null : wrongResultsMessage(step.runtime, check), max_abs: check.max_abs, basis: check.basis };
    remember(record.sha256, step.key, version, device, verdict);
    const result = {
      status: check.ok ? "passed" : "failed", ...verdict, rule: check.rule, budget: check.basis === "budget" ? rule.budget : null,
      metric: check.metric, diagnostic: check.diagnostic, ms: check.ms, runMs: check.runMs, bytes: reference.bytes,
    };
    if (!check.ok) {
      const error = /** @type {Error & {wrong?: boolean, verification?: object}} */ (new Error(verdict.reason));
      error.wrong = true;
      error.verification = result;
      throw error;
    }
    return result;
  }

  // The error a step's engine failure becomes, its verdict remembered unless the failure depends on the moment
  // (memory, a lost GPU device): the plan then skips the pair on this device without downloading it again.
  async #failed(step, record, session, error) {
    const stage = session ? "its first run" : "creating a session";
    const reason = `${step.runtime} failed ${stage} on this device: ${engineError(error.message)}`;
    if (lastingFailure(error.message)) {
      const version = session?.info.version ?? ORT_WEB_VERSION;
      remember(record.sha256, step.key, version, await probe(), { ok: false, reason, max_abs: null, basis: "error" });
    }
    return Object.assign(new Error(reason), { stage: error.stage ?? null });
  }

  // Release every loaded model and worker (e.g. after clearing the cache).
  /** @returns {Promise<void>} */
  async reset() {
    await Promise.all([...this.loaded].map((m) => m.dispose()));
    dropAllWorkers();
  }

  #json(path, { required = false } = {}) {
    const url = this.url(path);
    if (!this.cache.has(url)) {
      const promise = fetch(url).then(async (response) => {
        if (!required && (response.status === 204 || response.status === 404)) return null;
        const body = await response.json().catch(() => null);
        if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}${body?.error ? `: ${body.error}` : ""}`);
        return body;
      }, (error) => {
        throw fetchFailed(url, error);
      });
      promise.catch(() => this.cache.delete(url));
      this.cache.set(url, promise);
    }
    return this.cache.get(url);
  }
}

// The choice's why, with why each runtime the plan prefers to it is not used here ("this browser has no WebGPU
// (navigator.gpu is null)" in WebKit): the reason the probe gave, in words.
function withUnavailable(choice, plan) {
  const rank = (runtime) => PINNABLE.indexOf(runtime);
  const missing = plan.skipped.filter((s) => !s.variant && rank(s.runtime) < rank(choice.runtime) && !s.reason.startsWith("runtime pinned"));
  return [choice.why, ...missing.map((s) => `not ${s.runtime}: ${s.reason}`)].join("; ");
}

function choiceOf(step, verification, session) {
  return {
    runtime: step.runtime, key: step.key, variant: step.variant, form: step.form ?? null, why: step.why,
    threads: session?.info.threads ?? null, verification,
  };
}
