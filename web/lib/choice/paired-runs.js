// Whether N threads beat one on this device, from paired runs: the rule a thread trial (threads.js) stops by.
// Each pair is one run on each count, back to back, so a burst of another program's work falls on both. A pair
// votes for N threads when its N-thread run took less than MIN_GAIN (90%) of its one-thread run, else for one.
// Votes from a coin would split; the trial stops as soon as a sign test says they do not (the chance of votes at
// least this lopsided from a coin is at most ALPHA: 6 of 6, 8 of 9, 10 of 12 ...), else after MAX_PAIRS pairs or
// BUDGET_MS of timed runs, undecided: the count the priors gave stays.
import { formatMs } from "../remembered/speeds.js";
import { MIN_GAIN } from "./cost.js";

/** Both sides' runs before the first pair, which do not count: a fresh session's thread pool, JIT and allocator. */
export const WARMUP_RUNS = 2;
// ...and warm-up goes on until both sides together ran this long. Chromium compiles a hot wasm function again,
// optimized, in the background once it has run a while: on 2 cores that compile takes the second thread's core.
// minilm's N-thread runs were 1.5-3x their settled time over their first ~1 s of running (int8-dynamic: 17-36 ms,
// then 8-11 ms; fp32: 14-59 ms, then 14-18 ms), and a trial of 2 warm-up runs chose one thread in every round.
export const WARMUP_MS = 1500;
/** A bound on each side's warm-up runs, for a model whose runs are too short to add up to WARMUP_MS soon. */
export const MAX_WARMUP_RUNS = 40;
export const MAX_PAIRS = 20;
/** Timed runs (both sides, warm-up not included) past which an undecided trial stops: the page's runs wait on it. */
export const BUDGET_MS = 5000;

/**
 * Whether a trial's warm-up is over, after `runs` warm-up runs on each side that took `spentMs` in all.
 * @param {number} runs @param {number} spentMs
 */
export function warmedUp(runs, spentMs) {
  return runs >= MAX_WARMUP_RUNS || (runs >= WARMUP_RUNS && spentMs >= WARMUP_MS);
}
/** The sign test's level, one-sided for the side the votes lean to (5% two-sided). */
export const ALPHA = 0.025;

/**
 * The chance that a fair coin gives at least `wins` heads in `tosses` (the binomial tail).
 * @param {number} wins
 * @param {number} tosses
 */
export function coinTail(wins, tosses) {
  let total = 0;
  let term = 0.5 ** tosses; // C(tosses, 0) / 2^tosses
  for (let k = 0; k <= tosses; k++) {
    if (k >= wins) total += term;
    term = (term * (tosses - k)) / (k + 1);
  }
  return Math.min(1, total);
}

/**
 * What the pairs so far say: the medians of each side and of the paired ratio (N threads' time over one's), the
 * votes for N threads, and the side the sign test finds clear ("many", "one") or null.
 * @param {Array<{one: number, many: number}>} pairs run times in ms
 * @returns {{pairs: number, votes: number, ratio: number, oneMs: number, manyMs: number, clear: "many"|"one"|null}}
 */
export function pairedVerdict(pairs) {
  const votes = pairs.filter((p) => p.many < p.one * MIN_GAIN).length;
  const against = pairs.length - votes;
  const clear =
    pairs.length && coinTail(votes, pairs.length) <= ALPHA
      ? "many"
      : pairs.length && coinTail(against, pairs.length) <= ALPHA
        ? "one"
        : null;
  return {
    pairs: pairs.length,
    votes,
    clear,
    ratio: median(pairs.map((p) => p.many / p.one)),
    oneMs: median(pairs.map((p) => p.one)),
    manyMs: median(pairs.map((p) => p.many)),
  };
}

/**
 * Whether a trial stops here: clear, or out of pairs or time.
 * @param {{pairs: number, clear: string|null}} verdict
 * @param {number} spentMs every timed run so far, both sides, warm-up included
 */
export function enough(verdict, spentMs) {
  return verdict.clear !== null || verdict.pairs >= MAX_PAIRS || spentMs >= BUDGET_MS;
}

/**
 * The count a finished trial keeps, and why in words: the clear side, else the prior's count.
 * @param {ReturnType<typeof pairedVerdict>} verdict
 * @param {number} many the N of the trial
 * @param {number} prior the count the load started on
 * @returns {{threads: number, decided: boolean, why: string}}
 */
export function trialOutcome(verdict, many, prior) {
  const figures = measuredWords(verdict, many);
  if (verdict.clear === "many") return { threads: many, decided: true, why: `${many} threads: ${figures}` };
  if (verdict.clear === "one") return { threads: 1, decided: true, why: `one thread: ${figures}` };
  const kept = prior === 1 ? "one thread" : `${prior} threads`;
  return { threads: prior, decided: false, why: `${kept}, as before the trial: no clear difference (${figures})` };
}

/**
 * The figures of a trial in words: "2 threads took 0.58x the time of one (43 ms against 74 ms, medians of 6
 * paired runs; 6 of 6 pairs 10% faster on 2 threads)".
 * @param {{pairs: number, votes: number, ratio: number, oneMs: number, manyMs: number}} verdict
 * @param {number} many
 */
export function measuredWords({ pairs, votes, ratio, oneMs, manyMs }, many) {
  if (!pairs) return "no paired runs";
  const gain = Math.round((1 - MIN_GAIN) * 100);
  return (
    `${many} threads took ${ratio.toFixed(2)}x the time of one (${formatMs(manyMs)} against ${formatMs(oneMs)}, ` +
    `medians of ${pairs} paired runs; ${votes} of ${pairs} pairs ${gain}% faster on ${many} threads)`
  );
}

/** @param {number[]} values */
function median(values) {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
