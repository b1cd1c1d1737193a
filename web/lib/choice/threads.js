// How many WebAssembly threads a file runs on here: by measurement. hardwareConcurrency is only a ceiling
// (threadCeiling in probe.js): WebKitGTK says 4 on a 2-core machine, where 4 threads ran minilm 2 to 4 times
// slower than one. Until measured, a file runs on one thread, which never oversubscribes a machine. Its first
// load under a higher ceiling returns on that one thread, then runs a trial (thread-trial.js): a session on the
// ceiling's N threads beside it, verified as it was, then TRIAL_ROUNDS warm runs of each on the reference
// inputs, interleaved and queued with the page's own runs. N is kept only when at least 10% faster (cost.js's
// MIN_GAIN); the model then moves to it. The trial is remembered per file and per device (its fingerprint and
// ceiling), so the file's next load starts with the measured count, and a later file takes the device's
// count without a trial of its own once one trial had work enough to tell (DECISIVE_MS). The trial's runs
// also go to the speeds the plan ranks by (speeds.js). The fleet's medians of both thread counts on this
// device class, or the repository's bench when it ran both on this kind of device, decide as a trial would.
import { formatMs, ownSpeed, recordRun } from "../memory/speeds.js";
import { forget, readJson, updateJson } from "../memory/store.js";
import { benchRow, MIN_GAIN, prior } from "./cost.js";
import { fleetFailure, fleetTimes } from "./fleet.js";
import { fingerprint, threadCeiling } from "./probe.js";
import { oneThread, placed } from "./runtimes.js";

// {"fingerprint|ceiling": {device: Trial, files: {sha256: Trial}}} (Trial: see trials() below)
const TRIALS = "onnxport-threads-v1";
// A one-thread run shorter than this is too short for threads to pay (dispatching work to them costs more).
export const TINY_MS = 1;
// A trial whose one-thread runs took at least this long had work enough to show what threads do on the
// device: it then speaks for files without a trial of their own.
export const DECISIVE_MS = 5;
export const TRIAL_ROUNDS = 2;

/**
 * How a runtime runs a file on this device: its key (wasm, or wasm-1t on one thread), its threads, why, and
 * the trial to run on this load (null: none). Rows that do not take all the page's threads keep their key.
 * @param {string} runtime a browser runtime key
 * @param {{sha256: string, speed?: {native_ms?: number}}} record the file (the variant as built: its forms are
 *   the same arithmetic)
 * @param {import("./probe.js").Device} device
 * @param {{bench?: object, fleet?: object, model?: {name: string}, variant?: string}} [context] the fleet's
 *   medians (fleet.js) or the repository's bench rows for both keys on this kind of device decide as a trial would
 * @returns {{key: string, threads: number, why: string|null, trial: {key: string, threads: number}|null}}
 */
export function threadChoice(runtime, record, device, { bench = null, fleet = null, model, variant } = {}) {
  const one = oneThread(runtime);
  if (!one) return { ...placed(runtime, device), why: null, trial: null };
  const ceiling = threadCeiling(device);
  const single = { key: one, threads: 1, trial: null };
  if (ceiling.threads === 1) return { ...single, why: ceiling.why };
  const many = { key: runtime, threads: ceiling.threads, trial: null };
  // The thread count two warm runs of one source support, the source named in `why`.
  const chosen = (oneMs, manyMs, source) => {
    const verdict = decide(oneMs, manyMs, ceiling.threads);
    return { ...(verdict.threads === 1 ? single : many), why: `${verdict.why} ${source}` };
  };
  // {oneMs, manyMs} of a source that measured both keys (msOf(key): its warm run), or null.
  const bothOf = (msOf) => {
    const [manyMs, oneMs] = [runtime, one].map(msOf);
    return typeof manyMs === "number" && typeof oneMs === "number" ? { oneMs, manyMs } : null;
  };
  // The file's own trial first (both sides ran the same inputs; the speeds' running means mix a user's inputs).
  const remembered = trials(device);
  const own = remembered.files?.[record.sha256];
  if (own) return chosen(own.one_ms, own.many_ms, `(this file's trial, ${own.at.slice(0, 10)})`);
  // One thread failed verification on devices of this class, and the page's threads did not: no trial decides
  // between a wrong result and a right one.
  const oneFailed = fleetFailure(fleet, record.sha256, one, device);
  if (oneFailed && !fleetFailure(fleet, record.sha256, runtime, device)) {
    return { ...many, why: `${ceiling.threads} threads: one thread ${oneFailed}` };
  }
  const byFleet = bothOf((key) => fleetTimes(fleet, record.sha256, key, device)?.warm_run_ms?.median);
  if (byFleet) return chosen(byFleet.oneMs, byFleet.manyMs, "(the fleet's medians on this device class)");
  const benched = bothOf((key) => benchRow(bench, device, { model, variant, record, key })?.warm?.median_ms);
  if (benched) return chosen(benched.oneMs, benched.manyMs, "(onnxport bench on this kind of device)");
  const trial = remembered.device;
  if (trial && trial.one_ms >= DECISIVE_MS) {
    return chosen(trial.one_ms, trial.many_ms, `on ${trial.model} ${trial.variant} (this device's trial, ${trial.at.slice(0, 10)})`);
  }
  const oneMs = ownSpeed(record.sha256, one)?.warm_ms;
  const expected = typeof oneMs === "number" ? oneMs : priorMs(one, record, device);
  if (expected < TINY_MS) return { ...single, why: `one thread: a run takes about ${formatMs(expected)}, too short for threads to pay` };
  return {
    ...single, trial: { key: runtime, threads: ceiling.threads },
    why: `one thread until measured: ${ceiling.threads} threads are measured against it after this load (${ceiling.why})`,
  };
}

function priorMs(key, record, device) {
  const native = record.speed?.native_ms;
  const guess = prior(key, device);
  return typeof native === "number" && guess ? native * guess.factor + guess.overheadMs : Infinity;
}

/**
 * The thread count two warm run times support: N only when at least MIN_GAIN faster than one thread.
 * @param {number} oneMs a warm run on one thread
 * @param {number} manyMs a warm run on `threads`
 * @param {number} threads
 * @returns {{threads: number, why: string}}
 */
export function decide(oneMs, manyMs, threads) {
  const figures = `${threads} threads ran ${formatMs(manyMs)} per run, one ${formatMs(oneMs)}`;
  if (manyMs < oneMs * MIN_GAIN) return { threads, why: `${threads} threads: ${figures}` };
  const gain = manyMs < oneMs ? ` (less than ${Math.round((1 - MIN_GAIN) * 100)}% faster)` : "";
  return { threads: 1, why: `one thread: ${figures}${gain}` };
}

/**
 * A trial: first runs where a session has not run yet, then `rounds` warm runs of each, interleaved, one
 * thread first, each in its `turn` (the model's queue: never beside a run of the page's). Each run is remembered
 * (speeds.js); a side's time is the best of its warm runs (another program's burst slows a run, nothing makes
 * one faster).
 * @param {{single: Session, many: Session, inputs: object, sha256: string, keys: {single: string, many: string},
 *   turn?: (work: () => Promise<{runMs: number}>) => Promise<{runMs: number}>}} args
 * @param {number} [rounds]
 * @returns {Promise<{oneMs: number, manyMs: number, runs: {one: number[], many: number[]}}>}
 * @typedef {{runs: number, run(feeds: object): Promise<{runMs: number}>}} Session
 */
export async function trialRuns({ single, many, inputs, sha256, keys, turn = (work) => work() }, rounds = TRIAL_ROUNDS) {
  /** @type {Array<{session: Session, key: string, times: number[]}>} */
  const sides = [{ session: single, key: keys.single, times: [] }, { session: many, key: keys.many, times: [] }];
  for (const { session, key } of sides) {
    if (session.runs === 0) recordRun(sha256, key, (await turn(() => session.run(inputs))).runMs, true);
  }
  for (let round = 0; round < rounds; round++) {
    for (const { session, key, times } of sides) {
      const { runMs } = await turn(() => session.run(inputs));
      recordRun(sha256, key, runMs, false);
      times.push(runMs);
    }
  }
  const [one, more] = sides.map((side) => side.times);
  return { oneMs: Math.min(...one), manyMs: Math.min(...more), runs: { one, many: more } };
}

/**
 * This device's trials under its ceiling: {device: the trial that speaks for it, files: {sha256: trial}}.
 * @param {import("./probe.js").Device} device
 * @returns {{device?: Trial, files?: Record<string, Trial>}}
 * @typedef {{threads: number, many: number, one_ms: number, many_ms: number, model: string, variant: string, at: string}} Trial
 */
export function trials(device) {
  return readJson(TRIALS)[trialKey(device)] ?? {};
}

/**
 * Remembers a file's trial, and the device's when it is the first or the first decisive one (DECISIVE_MS).
 * @param {import("./probe.js").Device} device
 * @param {{oneMs: number, manyMs: number, model: string, variant: string, sha256: string}} trial
 */
export function rememberTrial(device, { oneMs, manyMs, model, variant, sha256 }) {
  const many = threadCeiling(device).threads;
  const trial = { threads: decide(oneMs, manyMs, many).threads, many, one_ms: oneMs, many_ms: manyMs, model, variant, at: new Date().toISOString() };
  updateJson(TRIALS, (all) => {
    const entry = (all[trialKey(device)] ??= {});
    (entry.files ??= {})[sha256] = trial;
    if (!(entry.device?.one_ms >= DECISIVE_MS)) entry.device = trial;
  });
}

/** Forgets every device's trials (the next load with threads runs one again). */
export function forgetThreads() {
  forget(TRIALS);
}

function trialKey(device) {
  return `${fingerprint(device)}|${threadCeiling(device).threads}`;
}
