// A connection to one onnxport server: its manifest, files and API, and load(model), which
// plans, downloads, verifies on first use and falls back step by step.
import { fileRecord } from "../choice/forms.js";
import { buildPlan } from "../choice/plan.js";
import { probe } from "../choice/probe.js";
import { inBrowser, PINNABLE, runtime as runtimeRow } from "../choice/runtimes.js";
import { remembered } from "../choice/artifact-verdicts.js";
import { Documents } from "../files/documents.js";
import { cachedUrls, loadArtifact, loadReference } from "../files/downloads.js";
import { checkManifest } from "../files/manifest.js";
import { LoadedModel } from "../model/model.js";
import { ServerSession } from "../model/server-session.js";
import { openSession, SessionError, startRuntime } from "../model/session.js";
import { dropAllWorkers } from "../model/workers.js";
import { openPipeline } from "../pipelines/pipeline.js";
import { failedStep, verifyOnLoad } from "../verification/verify.js";
import { REPORT_PATH, reportResult, sendReport } from "./report.js";
import { threadTrial } from "./thread-trial.js";

/** @import { ModelEntry, VariantRecord } from "../files/manifest.js" */
/** @import { Tensors } from "../tensors/tensors.js" */
/** @import { Choice, ClientOptions, LoadOptions, Plan, PlanStep } from "../types.js" */

// The onnxruntime-web release our server ships (package.json pins it; a test keeps them equal).
export const ORT_WEB_VERSION = "1.30.0";
const VERIFY_MODES = Object.freeze(["first-use", "always", "off"]);
// This file is served at <server>/web/lib/client/client.js. (A bundled page has no such place: it passes
// the server's URL. import.meta.url stays out of the `new URL(path literal, import.meta.url)` form, which
// bundlers read as a file to copy.)
const HERE = import.meta.url;
const DEFAULT_BASE = new URL("../../../", HERE).href;

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
   * @param {ClientOptions} [options] files (a CDN), inference (another V2 endpoint), report (fleet reports), testing
   */
  constructor(baseUrl, { files = null, inference = null, report = false, testing = {} } = {}) {
    const folder = (url) => new URL(url, globalThis.location?.href).href.replace(/\/?$/, "/");
    this.base = folder(baseUrl);
    this.files = files ? folder(files) : new URL("repository/", this.base).href;
    this.inference = inference ? folder(inference) : this.base;
    if (typeof report !== "boolean") throw new Error(`report must be true or false, got ${JSON.stringify(report)}`);
    this.report = report; // off unless the page opts in: report.js says what a report holds
    /** @type {Promise<number|null>} the last load's report: the server's status, null when none was sent */
    this.lastReport = Promise.resolve(null);
    if (testing.perturb && globalThis.navigator?.webdriver !== true) {
      throw new Error(
        "testing.perturb makes a runtime give wrong answers: refused outside automated tests (navigator.webdriver is not set)",
      );
    }
    const [target, mode = "nudge"] = (testing.perturb ?? "").split(":");
    this.perturb = target ? { target, mode } : null;
    this.documents = new Documents((path) => this.url(path));
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

  /** @returns {Promise<import("../files/manifest.js").Manifest>} the server's manifest, read once */
  manifest() {
    return this.documents
      .json("api/manifest", { required: true })
      .then((body) => checkManifest(body, this.url("api/manifest")));
  }

  /** @param {string} name @returns {Promise<ModelEntry>} the manifest's entry of a model */
  async model(name) {
    const built = await this.manifest();
    const model = built.models[name];
    if (!model)
      throw new Error(
        `no model ${JSON.stringify(name)} on ${this.base}; models: ${Object.keys(built.models).join(", ") || "none"}`,
      );
    return model;
  }

  /** @returns {Promise<import("../choice/probe.js").Device>} what this browser can do (probed once per page) */
  device() {
    return probe();
  }

  /** @returns {Promise<Record<string, import("../verification/judgement.js").Tolerance>>} the server's tolerance table ("variant/key") */
  tolerances() {
    return this.documents.json("api/tolerances", { required: true });
  }

  bench() {
    return this.documents.json("api/bench");
  }

  conformance() {
    return this.documents.json("api/conformance");
  }

  /** What devices of each class reported (docs/reference/fleet.md), or null: a server without it, or one that failed to say. */
  fleet() {
    return this.documents.json("api/fleet").catch(() => null);
  }

  // Golden sets as [{inputs, outputs}] of decoded tensors.
  /** @param {string} name @returns {Promise<Array<{inputs: Tensors, outputs: Tensors}>>} */
  golden(name) {
    return this.documents.golden(name);
  }

  // The variant's reference file (downloads.js loadReference), read once per client (several runtimes may
  // verify one artifact).
  /**
   * @param {Partial<VariantRecord>} record
   * @returns {Promise<{inputs: Tensors, outputs: Tensors, bytes: number} | null>} null when the record has no reference
   */
  reference(record) {
    if (!record.reference) return Promise.resolve(null);
    const url = this.fileUrl(record.reference.file);
    if (!this.references.has(url)) {
      const loading = loadReference((file) => this.fileUrl(file), record);
      loading.catch(() => this.references.delete(url));
      this.references.set(url, loading);
    }
    return this.references.get(url);
  }

  /**
   * The plan load() would follow on this device, without loading anything.
   * @param {string} name
   * @param {Pick<LoadOptions, "runtime" | "variant" | "form" | "verify" | "expectedRuns">} [pins]
   * @returns {Promise<Plan>}
   */
  async plan(name, { runtime = "", variant = "", form = "", verify = "first-use", expectedRuns } = {}) {
    const [model, device, bench, conformance, fleet, cached] = await Promise.all([
      this.model(name),
      probe(),
      this.bench(),
      this.conformance(),
      this.fleet(),
      cachedUrls(),
    ]);
    return buildPlan(model, device, {
      pin: { runtime, variant, form },
      bench,
      conformance,
      fleet,
      cached,
      verify,
      expectedRuns,
      ortVersion: ORT_WEB_VERSION,
      fileUrl: (file) => this.fileUrl(file),
    });
  }

  // An artifact's bytes (verified, cached) and a session for it: the conformance check,
  // the bench and the library's own models all start here.
  // The runtime starts (worker, .wasm, threads) while the bytes are read, not after.
  /**
   * @param {import("../files/manifest.js").FileRecord} record
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
    const stages = {
      load_ms: loadMs,
      download_ms: loaded.networkMs,
      verify_ms: loaded.verifyMs,
      init_ms: initMs,
      ready_ms: readyMs,
    };
    return { session, source: loaded.source, notes: loaded.notes, loadMs, stages, spare: copy };
  }

  // Starts the runtime the plan would try first for this model (worker, .wasm, threads: 150 to
  // 300 ms on a 2-core machine) without loading the model, so that a later load() finds it
  // started: call it when the page opens, before anyone asks for a result. Resolves to the
  // runtime's {runtime, version, threads, initMs}, or null when the plan starts on the server.
  /**
   * @param {string} name
   * @param {Pick<LoadOptions, "runtime" | "variant" | "expectedRuns">} [pins]
   * @returns {Promise<{runtime: string, version: string|null, threads: number, initMs: number} | null>}
   */
  async startAhead(name, { runtime = "", variant = "", expectedRuns } = {}) {
    const { steps } = await this.plan(name, { runtime, variant, expectedRuns });
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
   * @returns {Promise<import("../model/session.js").RuntimeOptions>}
   */
  async #runtimeOptions(runtime, { worker, verbose = false }) {
    return {
      runtime,
      device: await probe(),
      ortBase: this.ortBase,
      worker,
      verbose,
      // A target names a key (wasm-1t) or the runtime a user pins (wasm: either thread count).
      perturb:
        this.perturb && (this.perturb.target === runtime || this.perturb.target === runtimeRow(runtime)?.runtime)
          ? this.perturb.mode
          : false,
    };
  }

  // options: runtime / variant (pins), verify: first-use | always | off, expectedRuns (the plan's), and hooks
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
    if (!VERIFY_MODES.includes(verify))
      throw new Error(`verify must be one of ${VERIFY_MODES.join(", ")}, got ${JSON.stringify(verify)}`);
    const model = await this.model(name);
    const plan = await this.plan(name, { ...options, verify });
    // The pipeline's files (a tokenizer) download beside the model's, not after it: its first answer waits for both.
    this.#pipelineOf(model)?.().catch(() => {}); // a failure is the first pipeline call's to report
    const attempts = [];
    const brokenRuntimes = new Set();
    const results = []; // the fleet report's: every step verified here, passed or failed
    try {
      for (const step of plan.steps) {
        // a form's step is followed by its variant as built (plan.js)
        if (brokenRuntimes.has(step.key)) continue;
        options.onStep?.(step);
        try {
          const loaded = await this.#open(model, step, verify, options, results);
          loaded.choice = { ...loaded.choice, why: withUnavailable(loaded.choice, plan), attempts, plan };
          return loaded;
        } catch (error) {
          if (error.stage === "init") brokenRuntimes.add(step.key); // the runtime, not this model, failed
          attempts.push({
            runtime: step.runtime,
            variant: step.variant,
            form: step.form ?? null,
            error: error.message,
            wrong: Boolean(error.wrong),
          });
          options.onFailure?.(step, error);
        }
      }
    } finally {
      if (this.report) this.lastReport = sendReport(this.url(REPORT_PATH), results);
    }
    const reasons = attempts
      .map((a) => `${a.runtime}/${a.variant}${a.form ? ` (${a.form} form)` : ""}: ${a.error}`)
      .join("; ");
    throw new LoadError(`every runtime failed for ${name}: ${reasons || "the plan is empty"}`, attempts);
  }

  /**
   * @param {ModelEntry} model
   * @param {PlanStep} step
   * @param {LoadOptions["verify"]} verify
   * @param {LoadOptions} options
   * @param {ReturnType<typeof reportResult>[]} results where a verified step's result goes (the fleet report)
   * @returns {Promise<LoadedModel>}
   */
  async #open(model, step, verify, options, results) {
    const record = fileRecord(model.variants[step.variant], step.form ?? null); // the variant itself unless a form
    if (!inBrowser(step.runtime)) {
      const session = new ServerSession(this.inference, model.name, step.variant, step.key);
      return new LoadedModel({
        name: model.name,
        record,
        session,
        choice: choiceOf(step, { status: "reference" }, session),
        pipeline: this.#pipelineOf(model),
      });
    }
    const file = {
      model: model.name,
      variant: step.variant,
      form: step.form ?? null,
      sha256: record.sha256,
      key: step.key,
      threads: null,
    };
    this.#readAhead(model, step, record, verify).catch(() => {}); // never in the way of the load
    let opened;
    try {
      opened = await this.session(record, step.key, { onProgress: options.onProgress, spare: Boolean(step.trial) });
    } catch (error) {
      // The engine refused this file (not the runtime failing to start, nor a download): a verdict to remember.
      if (!(error instanceof SessionError && error.stage === "create")) throw error;
      const failed = await failedStep(step, record, null, error, ORT_WEB_VERSION);
      if (failed.lasting) results.push(reportResult(file, "fail", null, {}));
      throw failed;
    }
    const { session, source, notes, spare } = opened;
    for (const note of notes) options.onNote?.(note);
    file.threads = session.info.threads ?? null;
    let verification;
    try {
      verification = await this.#verify(model, step, record, session, verify);
      if (verification.status === "passed") results.push(await this.#passed(file, record, session, verification));
    } catch (error) {
      if (error.wrong || error.lasting) {
        results.push(
          reportResult(file, "fail", error.verification ?? null, {
            create_ms: session.createMs,
            first_run_ms: error.verification?.runMs,
          }),
        );
      }
      await session.release();
      throw error;
    }
    const loaded = new LoadedModel({
      name: model.name,
      record,
      session,
      choice: { ...choiceOf(step, verification, session), source, createMs: session.createMs },
      onDispose: () => this.loaded.delete(loaded),
      pipeline: this.#pipelineOf(model),
    });
    this.loaded.add(loaded);
    if (step.trial) {
      loaded.threadTrial = threadTrial(loaded, {
        model,
        step,
        spare,
        onNote: options.onNote,
        open: async (key, bytes) => openSession({ ...(await this.#runtimeOptions(key, {})), bytes }),
        verify: (session, many) => this.#verify(model, many, record, session, verify),
        reference: () => this.reference(record),
      });
    }
    return loaded;
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

  // A verified step's report result: with reports on, the reference inputs run once more for a warm time (the
  // verification's run was the session's first).
  async #passed(file, record, session, verification) {
    const times = { create_ms: session.createMs, first_run_ms: verification.runMs, warm_run_ms: null };
    if (this.report) {
      // Reporting never changes the load: a failed timing run leaves the warm time out, nothing more.
      try {
        const reference = await this.reference(record);
        if (reference) times.warm_run_ms = (await session.run(reference.inputs)).runMs;
      } catch {
        times.warm_run_ms = null;
      }
    }
    return reportResult(file, "pass", verification, times);
  }

  // What a verification about to run reads (a few KB: references, the tolerance table), fetched beside the model's
  // bytes rather than after its session; nothing when it will not run (off, or remembered passing here). Read once
  // per client; a failure is the verification's to report.
  async #readAhead(model, step, record, verify) {
    if (verify === "off") return;
    if (verify === "first-use" && remembered(record.sha256, step.key, ORT_WEB_VERSION, await probe())?.ok) return;
    const fp32 = model.variants.fp32;
    await Promise.all([
      this.reference(record),
      this.tolerances(),
      ...(fp32 && fp32 !== record ? [this.reference(fp32)] : []),
    ]).catch(() => {});
  }

  /** First-use verification (verify.js), the references read through this client. */
  #verify(model, step, record, session, mode) {
    return verifyOnLoad(session, step, {
      mode,
      ortVersion: ORT_WEB_VERSION,
      model,
      record,
      reference: (file) => this.reference(file),
      tolerances: () => this.tolerances(),
    });
  }

  // Release every loaded model and worker (e.g. after clearing the cache).
  /** @returns {Promise<void>} */
  async reset() {
    await Promise.all([...this.loaded].map((m) => m.dispose()));
    dropAllWorkers();
  }
}

// The choice's why, with why each runtime the plan prefers to it is not used here ("this browser has no WebGPU
// (navigator.gpu is null)" in WebKit): the reason the probe gave, in words.
function withUnavailable(choice, plan) {
  const rank = (runtime) => PINNABLE.indexOf(runtime);
  const missing = plan.skipped.filter(
    (s) => !s.variant && rank(s.runtime) < rank(choice.runtime) && !s.reason.startsWith("runtime pinned"),
  );
  return [choice.why, ...missing.map((s) => `not ${s.runtime}: ${s.reason}`)].join("; ");
}

function choiceOf(step, verification, session) {
  return {
    runtime: step.runtime,
    key: step.key,
    variant: step.variant,
    form: step.form ?? null,
    why: step.why,
    threads: session?.info.threads ?? null,
    verification,
  };
}
