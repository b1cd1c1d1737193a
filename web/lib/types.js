// The library's public types, as JSDoc: the options of connect() and load(), a plan and its steps, the
// choice a loaded model carries. Types only (no code runs here); index.js re-exports them, and the npm
// package's declarations are generated from these comments.
/**
 * Where a client finds what it does not take from the server itself.
 * @typedef {object} ClientOptions
 * @property {string|URL|null} [files] where the repository's files are served, if not by the server (a CDN)
 * @property {string|URL|null} [inference] the V2 API's base URL for the server fallback and references, if
 *   not the server (a Ray Serve or Triton endpoint: it must serve the same models under the same names)
 * @property {boolean} [report] send the server one fleet report per load (off by default): for each step this
 *   browser verified, the file's sha256, model, variant and form, the runtime and threads, the verdict with its
 *   metric, the create, first-run and warm-run times, the device class (engine and major version, WebGPU adapter
 *   vendor and architecture, a core-count bucket) and a random token of this browser profile (docs/reference/fleet.md)
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
 * @property {number|null} [expectedMs] what the page is expected to pay for the step: the download when the file is
 *   not cached, the session's creation (where measured) and load()'s `expectedRuns` x the warm run; null while the
 *   download's time is unknown (no download from the file's origin measured in this browser yet; `why` says so)
 * @property {number} [rankMs] what the plan orders steps by: expectedMs, an unknown download weighed at 10 Mbit/s
 * @property {number} [runMs] the expected warm run
 * @property {number|null} [createMs] the session's creation, where measured (null: unmeasured, and 0 in rankMs)
 */
/**
 * A load plan: the steps load() tries in order, and what was left out and why.
 * @typedef {{steps: PlanStep[], skipped: Array<{runtime: string, variant?: string, reason: string}>}} Plan
 */
/**
 * What load() may be told: pins, the verification mode and progress hooks.
 * @typedef {object} LoadOptions
 * @property {string} [runtime] load on this runtime only (one of RUNTIMES: WebGPU, WebNN, WebAssembly, the server)
 * @property {string} [variant] load this variant only ("fp32", "fp16", "int8-dynamic", "int8-static", "int8-weights", "int4")
 * @property {string} [form] load this optimized form of the pinned variant (docs/reference/manifest.md)
 * @property {"first-use"|"always"|"off"} [verify] check the runtime's outputs against the server's reference
 *   outputs before the first use on this device (default), before every load, or never
 * @property {number} [expectedRuns] how many runs the page expects to make of the model: the plan ranks each step
 *   by its download (once, when not cached) + session creation + expectedRuns x its warm run. A whole number of 1
 *   or more; 1 when a cold start matters most (the smaller file wins unless the larger one downloads faster than
 *   it runs slower). Default 1000 (DEFAULT_EXPECTED_RUNS in choice/cost.js): the warm run decides
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

export {};
