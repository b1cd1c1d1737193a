// How many WebAssembly threads a file runs on here. Until this device measured it, the priors decide, in this
// order: the fleet's medians of both counts on this device class; the repository's bench when it ran both on this
// kind of device; this device's trial on another file (when its runs were long enough to tell, DECISIVE_MS);
// otherwise all the threads the page has (threadCeiling in probe.js: min(4, hardwareConcurrency) on a
// cross-origin isolated page), except where the browser's core count is known to overstate the machine's
// (WebKitGTK says 4 on a 2-core machine, where 4 threads ran minilm 2 to 4 times slower than one): there one
// thread until measured, as for a run too short for threads to pay (TINY_MS).
// A file's first load on this device, unless the fleet or the bench decided, returns on the prior's count and
// then runs a trial (client/thread-trial.js): a session on the other count (one thread, or N), verified as the
// first was; both warmed by runs that do not count; then paired runs, alternating which count goes first
// (A B, B A, ...), queued with the page's own runs, until the sign test of paired-runs.js finds a side clearly
// faster (N kept only when at least 10% faster, cost.js's MIN_GAIN) or a bound of pairs or time is reached: then
// the prior's count stays. The outcome is remembered per file and per device (its fingerprint and ceiling) and
// re-checked by a fresh trial once RECHECK_DAYS old. The trial's runs also go to the speeds the plan ranks by.
import { formatMs, ownSpeed, recordRun } from "../remembered/speeds.js";
import { forget, readJson, updateJson } from "../remembered/store.js";
import { benchRow, MIN_GAIN, prior } from "./cost.js";
import { fleetFailure, fleetTimes } from "./fleet.js";
import { enough, measuredWords, pairedVerdict, warmedUp } from "./paired-runs.js";
import { fingerprint, threadCeiling } from "./probe.js";
import { oneThread, placed } from "./runtimes.js";

// {"fingerprint|ceiling": {device: Trial, files: {sha256: Trial}}} (Trial: see trials() below). v1 held trials of
// two warm runs a side, mostly warm-up: they are not read.
const TRIALS = "onnxport-threads-v2";
const OLD_TRIALS = "onnxport-threads-v1";
// A one-thread run shorter than this is too short for threads to pay (dispatching work to them costs more).
export const TINY_MS = 1;
// A trial whose one-thread runs took at least this long had work enough to show what threads do on the
// device: it then speaks for files without a trial of their own.
export const DECISIVE_MS = 5;
// A remembered trial this old is a prior again: the next load runs a fresh trial, which replaces it (a browser
// update, a new power plan or other load on the machine can change what threads do).
export const RECHECK_DAYS = 30;
const DAY_MS = 86_400_000;

/**
 * How a runtime runs a file on this device: its key (wasm, or wasm-1t on one thread), its threads, why, and
 * the trial to run after this load (the other count's key and threads; null: none). Rows that do not take all
 * the page's threads keep their key.
 * @param {string} runtime a browser runtime key
 * @param {{sha256: string, speed?: {native_ms?: number}}} record the file (the variant as built: its forms are
 *   the same arithmetic)
 * @param {import("./probe.js").Device} device
 * @param {{bench?: object, fleet?: object, model?: {name: string}, variant?: string, now?: number,
 *   failed?: (key: string) => string|null}} [context] the fleet's medians (fleet.js) or the repository's bench rows
 *   for both keys on this kind of device decide as a trial would; now: the clock remembered trials are aged by;
 *   failed: why the file is known to fail on a key here (the plan's knownFailure: onnxport check, the fleet, this
 *   browser's verification), null where it is not
 * @returns {{key: string, threads: number, why: string|null, trial: {key: string, threads: number}|null}}
 */
export function threadChoice(
  runtime,
  record,
  device,
  { bench = null, fleet = null, model, variant, now = Date.now(), failed } = {},
) {
  const one = oneThread(runtime);
  if (!one) return { ...placed(runtime, device), why: null, trial: null };
  const ceiling = threadCeiling(device);
  const single = { key: one, threads: 1, trial: null };
  if (ceiling.threads === 1) return { ...single, why: ceiling.why };
  const many = { key: runtime, threads: ceiling.threads, trial: null };
  const on = (threads) => (threads === 1 ? single : many);
  // The count `threads`, measured again after this load against the other one.
  const rechecked = (threads, why) => ({
    ...on(threads),
    trial: threads === 1 ? { key: runtime, threads: ceiling.threads } : { key: one, threads: 1 },
    why,
  });
  // The thread count two warm runs of one source support, the source named in `why`.
  const chosen = (oneMs, manyMs, source) => {
    const verdict = decide(oneMs, manyMs, ceiling.threads);
    return { ...on(verdict.threads), why: `${verdict.why} ${source}` };
  };
  // {oneMs, manyMs} of a source that measured both keys (msOf(key): its warm run), or null.
  const bothOf = (msOf) => {
    const [manyMs, oneMs] = [runtime, one].map(msOf);
    return typeof manyMs === "number" && typeof oneMs === "number" ? { oneMs, manyMs } : null;
  };
  // One count known to fail here and the other not: no trial, nor a remembered one, decides between a wrong
  // result and a right one.
  const failedOn = failed ?? ((key) => fleetFailure(fleet, record.sha256, key, device));
  const [oneFailed, manyFailed] = [one, runtime].map(failedOn);
  if (oneFailed && !manyFailed) return { ...many, why: `${ceiling.threads} threads: on one thread, ${oneFailed}` };
  if (manyFailed && !oneFailed) return { ...single, why: `one thread: on ${ceiling.threads} threads, ${manyFailed}` };
  // The file's own trial first (both sides ran the same inputs; the speeds' running means mix a user's inputs).
  const remembered = trials(device);
  const own = remembered.files?.[record.sha256];
  if (own) {
    const why = `${trialWhy(own)} (this file's trial, ${own.at.slice(0, 10)})`;
    return stale(own, now)
      ? rechecked(own.threads, `${why}; measured again after this load, ${RECHECK_DAYS} days on`)
      : { ...on(own.threads), why };
  }
  const byFleet = bothOf((key) => fleetTimes(fleet, record.sha256, key, device)?.warm_run_ms?.median);
  if (byFleet) return chosen(byFleet.oneMs, byFleet.manyMs, "(the fleet's medians on this device class)");
  const benched = bothOf((key) => benchRow(bench, device, { model, variant, record, key })?.warm?.median_ms);
  if (benched) return chosen(benched.oneMs, benched.manyMs, "(onnxport bench on this kind of device)");
  const trial = remembered.device;
  if (trial && trial.one_ms >= DECISIVE_MS && trial.decided !== false) {
    const why = `${trialWhy(trial)} on ${trial.model} ${trial.variant} (this device's trial, ${trial.at.slice(0, 10)})`;
    return stale(trial, now)
      ? rechecked(trial.threads, `${why}; this file measured after this load`)
      : { ...on(trial.threads), why };
  }
  const oneMs = ownSpeed(record.sha256, one)?.warm_ms;
  const expected = typeof oneMs === "number" ? oneMs : priorMs(one, record, device);
  if (expected < TINY_MS)
    return { ...single, why: `one thread: a run takes about ${formatMs(expected)}, too short for threads to pay` };
  if (ceiling.overstated) {
    return rechecked(
      1,
      `one thread until measured (${ceiling.overstated}): ${ceiling.threads} threads are measured against it after this load`,
    );
  }
  return rechecked(
    ceiling.threads,
    `${ceiling.threads} threads until measured, all the page's (${ceiling.why.replace(/^up to /, "")}): one thread is measured against them after this load`,
  );
}

// A remembered trial's outcome in words: its figures as measured (trials of v2), or its two warm runs (seeded).
function trialWhy(trial) {
  const count = trial.threads === 1 ? "one thread" : `${trial.threads} threads`;
  if (typeof trial.pairs !== "number") return decide(trial.one_ms, trial.many_ms, trial.many).why;
  const figures = measuredWords(
    { pairs: trial.pairs, votes: trial.votes, ratio: trial.ratio, oneMs: trial.one_ms, manyMs: trial.many_ms },
    trial.many,
  );
  return trial.decided === false ? `${count}: no clear difference (${figures})` : `${count}: ${figures}`;
}

function stale(trial, now) {
  return now - Date.parse(trial.at) >= RECHECK_DAYS * DAY_MS;
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
 * A trial (see the header and paired-runs.js): both sessions warmed by runs that do not count, at least WARMUP_RUNS
 * each and WARMUP_MS in all (a session's very first run is remembered as its first run), then paired runs, the count that goes first
 * alternating pair by pair, until the pairs are clear or a bound is reached. Each run in its `turn` (the model's
 * queue: never beside a run of the page's); every timed run is remembered (speeds.js).
 * @param {{single: Session, many: Session, inputs: object, sha256: string, keys: {single: string, many: string},
 *   turn?: (work: () => Promise<{runMs: number}>) => Promise<{runMs: number}>}} args
 * @returns {Promise<ReturnType<typeof pairedVerdict> & {runs: {one: number[], many: number[]}}>}
 * @typedef {{runs: number, run(feeds: object): Promise<{runMs: number}>}} Session
 */
export async function trialRuns({ single, many, inputs, sha256, keys, turn = (work) => work() }) {
  let spentMs = 0;
  const timed = async (session, key, counted) => {
    const first = session.runs === 0;
    const { runMs } = await turn(() => session.run(inputs));
    spentMs += runMs;
    if (first || counted) recordRun(sha256, key, runMs, first);
    return runMs;
  };
  for (let runs = 0; !warmedUp(runs, spentMs); runs++) {
    await timed(single, keys.single, false);
    await timed(many, keys.many, false);
  }
  spentMs = 0; // the budget counts the paired runs only
  /** @type {Array<{one: number, many: number}>} */
  const pairs = [];
  let verdict = pairedVerdict(pairs);
  while (!enough(verdict, spentMs)) {
    const pair = { one: 0, many: 0 };
    const sides = /** @type {const} */ ([
      ["many", many, keys.many],
      ["one", single, keys.single],
    ]);
    for (const [side, session, key] of pairs.length % 2 ? sides : [...sides].reverse())
      pair[side] = await timed(session, key, true);
    pairs.push(pair);
    verdict = pairedVerdict(pairs);
  }
  return { ...verdict, runs: { one: pairs.map((p) => p.one), many: pairs.map((p) => p.many) } };
}

/**
 * This device's trials under its ceiling: {device: the trial that speaks for it, files: {sha256: trial}}.
 * @param {import("./probe.js").Device} device
 * @returns {{device?: Trial, files?: Record<string, Trial>}}
 * @typedef {{threads: number, decided?: boolean, many: number, one_ms: number, many_ms: number, pairs?: number,
 *   votes?: number, ratio?: number, model: string, variant: string, at: string}} Trial (one_ms, many_ms: medians
 *   of the paired runs; ratio: the median of N threads' time over one's; votes: pairs 10% faster on N)
 */
export function trials(device) {
  return readJson(TRIALS)[trialKey(device)] ?? {};
}

/**
 * Remembers a file's trial, and the device's when it is the first or the first decisive one (DECISIVE_MS), or
 * replaces a decisive one as a re-check. A trial without paired figures (oneMs and manyMs alone) is decided as
 * decide() does.
 * @param {import("./probe.js").Device} device
 * @param {{oneMs: number, manyMs: number, model: string, variant: string, sha256: string, threads?: number,
 *   decided?: boolean, pairs?: number, votes?: number, ratio?: number}} trial
 */
export function rememberTrial(
  device,
  { oneMs, manyMs, model, variant, sha256, threads, decided = true, pairs, votes, ratio },
) {
  const many = threadCeiling(device).threads;
  const kept = threads ?? decide(oneMs, manyMs, many).threads;
  const paired = typeof pairs === "number" ? { pairs, votes, ratio } : {};
  const trial = {
    threads: kept,
    decided,
    many,
    one_ms: oneMs,
    many_ms: manyMs,
    ...paired,
    model,
    variant,
    at: new Date().toISOString(),
  };
  forget(OLD_TRIALS);
  updateJson(TRIALS, (all) => {
    const entry = (all[trialKey(device)] ??= {});
    (entry.files ??= {})[sha256] = trial;
    const speaks = decided && oneMs >= DECISIVE_MS;
    if (!(entry.device?.one_ms >= DECISIVE_MS && entry.device?.decided !== false) || speaks) entry.device = trial;
  });
}

/** Forgets every device's trials (the next load with threads runs one again). */
export function forgetThreads() {
  forget(TRIALS);
}

function trialKey(device) {
  return `${fingerprint(device)}|${threadCeiling(device).threads}`;
}
