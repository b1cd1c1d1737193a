// The plan's ranking rule, whole: what a step costs and how two steps compare. A step is a runtime,
// a variant and one of its files (the variant as built or a form) on this device.
//
// Every figure comes from the best source there is, the same for every step:
//   1. this browser's own measurements of the file on the runtime (speeds.js remembers them), for a warm run
//      also on the runtime's other thread count when this one is not measured yet;
//   2. the fleet: the median of what k or more other browsers of this device class reported (fleet.js);
//   3. the latest `onnxport bench` on a device of this kind: its row for the file (benchRow);
//   4. a prior: native onnxruntime's figure at build time x the runtime's factor (runtimes.js), a
//      fixed guess the plan says "prior" of (the factors were read once off `onnxport bench` on the
//      development machine, minilm, not measured for this model or device).
// cost(step) sums them two ways:
//   ms     what the page will pay for the step, and what the plan ranks runtimes and variants by: the
//          download when the file is not cached (once), plus the session's creation, plus the expected
//          runs (load()'s `expectedRuns`, DEFAULT_EXPECTED_RUNS) x the expected warm run. The download is the
//          file's bytes over the bandwidth this browser measured on its own downloads from the file's origin
//          (speeds.js); before one is measured its time is unknown (downloadMs null, and the plan says so),
//          and the order alone weighs its bytes at RANK_BYTES_PER_MS. The creation, from the first of the
//          sources above that measured it (no prior guesses one), counts only where every step of the plan
//          has one (alike): an unmeasured one would otherwise win for being unmeasured;
//   start  session creation, the first run and a warm run, from one source (null when unmeasured):
//          what decides between the files of one variant on one runtime, whose downloads and warm
//          runs are alike (a form is the same model saved so a session starts sooner). A form is
//          never taken on a guess, and only like is compared with like.
// decision(a, b) says in words which of those terms put step a before step b.
// A software adapter (SwiftShader, lavapipe; or an adapter measured as slow as one) is correct but slow: its
// runtime's `software` prior orders its steps among themselves, and until measured they rank after every other
// runtime's (`late`).
import { allSpeeds, bandwidth, formatMs, formatRate, ownSpeed } from "../remembered/speeds.js";
import { fleetTimes } from "./fleet.js";
import { deviceKind } from "./probe.js";
import { oneThread, runtime as runtimeRow, RUNTIMES } from "./runtimes.js";

// 10 Mbit/s: how an unmeasured download weighs in the plan's order. Never shown as an estimate.
export const RANK_BYTES_PER_MS = 1250;

// The runs a page is taken to make of a model when it does not say (load()'s `expectedRuns`). The download is
// paid once per device (the file stays cached across visits), the warm run at every call of every visit, so a
// page that runs a model more than a handful of times a visit makes thousands over its visits. At 1000, a
// variant must download 1.25 MB less (1 s at 10 Mbit/s) for each ms it adds to a run: the warm run decides
// unless the files differ several times in size. 100 was too few on minilm by the priors: int4 (16.4 MB)
// beat int8-dynamic (23.0 MB) below 102 runs on one thread (native x 6: 92 against 41 ms) and 205 on threads
// (x 3), where this browser measured 158 ms against 72.
export const DEFAULT_EXPECTED_RUNS = 1000;

/**
 * load()'s `expectedRuns` as the plan takes it: a whole number of 1 or more (1: the cold start is what matters),
 * DEFAULT_EXPECTED_RUNS when not given. Throws, naming the option, on anything else.
 * @param {unknown} value
 * @returns {number}
 */
export function expectedRuns(value) {
  if (value === undefined || value === null) return DEFAULT_EXPECTED_RUNS;
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 1) return value;
  const shown = typeof value === "number" ? String(value) : (JSON.stringify(value) ?? String(value));
  throw new Error(
    `expectedRuns must be a whole number of 1 or more (the runs the page expects of the model; 1 when a cold start matters most), got ${shown}`,
  );
}

// A form must start more than 10% sooner than the variant as built (a bench run's noise is about
// 5% here): a near tie keeps the file every other check ran.
export const MIN_GAIN = 0.9;

// The bench's row for the step's file on its runtime key, when the bench ran on a device of this
// kind: one of its engines (`browsers`; `browser` alone in reports from before them, or one engine's).
// A row names its file by sha256 (reports from before sha256: by model, variant, form and bytes).
export function benchRow(bench, device, { model, variant, form = null, record, key }) {
  const kind = deviceKind(device);
  const benched = [...Object.values(bench?.browsers ?? {}), bench?.browser].find(
    (s) => s?.device && deviceKind(s.device) === kind,
  );
  if (!benched) return null;
  return (
    benched.results?.find(
      (r) =>
        r.runtime === key &&
        r.status === "ok" &&
        (r.sha256
          ? r.sha256 === record.sha256
          : r.model === model?.name && r.variant === variant && (r.form ?? null) === form && r.bytes === record.bytes),
    ) ?? null
  );
}

// A GPU runtime measured this many times slower than WebAssembly on the same file runs like a software adapter,
// whatever its adapter says (SwiftShader ran minilm 95x slower, Firefox's lavapipe 150x; a real GPU is faster).
export const SOFTWARE_RATIO = 20;
// ...on a file whose WebAssembly run takes at least this long: on a tiny model a real GPU's dispatch dominates.
const SOFTWARE_MIN_CPU_MS = 5;

/**
 * Why the runtime's adapter here counts as software (its steps take the software prior and rank late), or null:
 * the probe found a fallback adapter (isFallbackAdapter, or a software rasterizer's name in its info), or this
 * browser measured the runtime SOFTWARE_RATIO times slower than WebAssembly on one file.
 * @returns {string|null}
 */
export function softwareReason(runtime, device) {
  const row = runtimeRow(runtime);
  if (!row?.software || !device.adapter) return null;
  if (device.adapter.fallback) return row.software.note;
  const slow = measuredSlow(runtime);
  return slow
    ? `measured ${Math.round(slow)}x slower than WebAssembly on a file here, as a software adapter is: ranked after WebAssembly until measured faster`
    : null;
}

// The largest slowdown of the runtime against the CPU runtimes on one file, measured here (null: none past the ratio).
function measuredSlow(runtime) {
  const cpu = new Set(RUNTIMES.filter((r) => r.provider && !r.gpu).map((r) => r.key));
  const best = new Map(); // sha256 -> fastest CPU warm run
  const gpu = [];
  for (const [name, figures] of Object.entries(allSpeeds())) {
    const [sha256, key] = name.split("|");
    if (typeof figures?.warm_ms !== "number") continue;
    if (cpu.has(key)) best.set(sha256, Math.min(best.get(sha256) ?? Infinity, figures.warm_ms));
    else if (key === runtime) gpu.push([sha256, figures.warm_ms]);
  }
  const ratios = gpu
    .filter(([sha256]) => best.get(sha256) >= SOFTWARE_MIN_CPU_MS)
    .map(([sha256, ms]) => ms / best.get(sha256));
  const worst = Math.max(0, ...ratios);
  return worst >= SOFTWARE_RATIO ? worst : null;
}

function onSoftware(runtime, device) {
  return softwareReason(runtime, device) !== null;
}

/** The runtime's prior on this device: {factor, overheadMs, why}, or null (runtimes.js). */
export function prior(key, device) {
  const row = runtimeRow(key);
  return (onSoftware(key, device) ? row.software.prior : row?.prior) ?? null;
}

// The fleet's figure in words: "the fleet: median of 14 devices of this class".
function fleetSource(time) {
  return `the fleet: median of ${time.clients} ${time.clients === 1 ? "device" : "devices"} of this class`;
}

// {ms, threads: "one thread" | "the page's threads"}: the step's file measured here on the other thread count of
// its runtime (wasm-1t for wasm, wasm for wasm-1t), or null.
function ownOtherCount(step) {
  const one = oneThread(step.key);
  const many = RUNTIMES.find((r) => oneThread(r.key) === step.key)?.key;
  const other = one ?? many;
  if (!other || other === step.key) return null;
  const speed = ownSpeed(step.record.sha256, other);
  const ms = speed?.warm_ms ?? speed?.first_ms;
  return typeof ms === "number" ? { ms, threads: one ? "one thread" : "the page's threads" } : null;
}

// {ms, source, measured, prior}: one warm run.
function warmRun(step, device, own, row, fleet, other) {
  const ownMs = own?.warm_ms ?? own?.first_ms;
  if (typeof ownMs === "number") return { ms: ownMs, source: "measured in this browser", measured: true };
  // The same file measured here on the runtime's other thread count says more of this device than a guess.
  if (other) return { ms: other.ms, source: `measured in this browser on ${other.threads}`, measured: true };
  const warm = fleet?.warm_run_ms;
  if (typeof warm?.median === "number") return { ms: warm.median, source: fleetSource(warm), measured: true };
  if (typeof row?.warm?.median_ms === "number")
    return { ms: row.warm.median_ms, source: "onnxport bench on this kind of device", measured: true };
  const native = step.record.speed?.native_ms;
  const guess = prior(step.key, device);
  if (typeof native === "number" && guess) {
    return {
      ms: native * guess.factor + guess.overheadMs,
      source: `prior: native ${formatMs(native)} at build time, ${guess.why}; not measured yet`,
      measured: false,
      prior: true,
    };
  }
  return { ms: Infinity, source: "never measured, and no build-time figure for a prior", measured: false };
}

// {ms, source} of the session's creation, or null: from the first source that measured it, as start() below.
function creation(own, row, fleet) {
  if (typeof own?.create_ms === "number") return { ms: own.create_ms, source: "measured in this browser" };
  const create = fleet?.create_ms;
  if (typeof create?.median === "number") return { ms: create.median, source: fleetSource(create) };
  if (typeof row?.cached?.create_ms === "number")
    return { ms: row.cached.create_ms, source: "onnxport bench on this kind of device" };
  return null;
}

// {ms, source} of a cached start and a warm run, or null: this browser's own measurements of both
// (the performance page records those), else the fleet's or the bench's creation, first run and warm run.
function start(own, row, fleet) {
  if (typeof own?.create_ms === "number" && typeof own?.warm_ms === "number") {
    return { ms: own.create_ms + own.warm_ms, source: "measured in this browser" };
  }
  const parts = fleet ? [fleet.create_ms, fleet.first_run_ms, fleet.warm_run_ms] : [];
  if (parts.length && parts.every((t) => typeof t?.median === "number")) {
    return {
      ms: parts.reduce((sum, t) => sum + t.median, 0),
      source: fleetSource({ clients: Math.min(...parts.map((t) => t.clients)) }),
    };
  }
  if (!row?.cached || !row.warm) return null;
  return {
    ms: row.cached.create_ms + row.cached.first_run_ms + row.warm.median_ms,
    source: "onnxport bench on this kind of device",
  };
}

/**
 * What a step costs here. step: {model, variant, form, record (its file, forms.js fileRecord),
 * runtime (as pinned: wasm), key (as run: wasm or wasm-1t)}; context: {bench, fleet, cached: Set of URLs, fileUrl(file),
 * expectedRuns (expectedRuns() above; the default when absent)}.
 * Returns {ms (the order's figure: what the page will pay), runs, run, create, start, downloadMs (null: unknown),
 * rankDownloadMs (the download as the order weighs it), bytes, cached, net (speeds.js bandwidth), late, software
 * (softwareReason)}.
 */
export function cost(step, device, context) {
  const runs = expectedRuns(context.expectedRuns);
  const own = ownSpeed(step.record.sha256, step.key);
  const row = benchRow(context.bench, device, step);
  const fleet = fleetTimes(context.fleet, step.record.sha256, step.key, device);
  const run = warmRun(step, device, own, row, fleet, ownOtherCount(step));
  const create = creation(own, row, fleet);
  const url = context.fileUrl(step.record.file);
  const cached = Boolean(context.cached?.has(url));
  const net = bandwidth(url);
  const downloadMs = cached ? 0 : net.bytesPerMs ? step.record.bytes / net.bytesPerMs : null;
  const rankDownloadMs = downloadMs ?? step.record.bytes / RANK_BYTES_PER_MS;
  const software = softwareReason(step.runtime, device);
  const late = software !== null && !run.measured;
  const ms = pays(rankDownloadMs, create, runs, run);
  return {
    ms,
    runs,
    run,
    create,
    start: start(own, row, fleet),
    downloadMs,
    rankDownloadMs,
    bytes: step.record.bytes,
    cached,
    net,
    late,
    software,
  };
}

/**
 * The costs of the steps one plan ranks, made alike: a creation counts only where every step has one measured,
 * as a step whose creation no source measured would otherwise rank ahead for that alone (its `create` then null).
 * @param {Array<ReturnType<typeof cost>>} costs
 */
export function alike(costs) {
  if (costs.every((c) => c.create)) return costs;
  return costs.map((c) => ({ ...c, create: null, ms: pays(c.rankDownloadMs, null, c.runs, c.run) }));
}

// The rule itself: the download once (as the order weighs it), the session's creation, the expected runs x the warm run.
function pays(downloadMs, create, runs, run) {
  return downloadMs + (create?.ms ?? 0) + runs * run.ms;
}

/** The plan's order of steps: a software adapter's unmeasured steps last, then by cost().ms. */
export function byCost(a, b) {
  return Number(a.late) - Number(b.late) || a.rankMs - b.rankMs;
}

/** Whether a file starts sooner than the variant as built, by enough, measured alike (cost().start). */
export function startsSooner(file, asBuilt) {
  return Boolean(file && asBuilt && file.source === asBuilt.source && file.ms < asBuilt.ms * MIN_GAIN);
}

// A duration in words: seconds from 1 s up ("5.3 s"), else formatMs.
function span(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : formatMs(ms);
}

function megabytes(bytes) {
  return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
}

// The rate a download's time was reckoned at, in words.
function rateWords(c) {
  return c.downloadMs === null
    ? `at ${(RANK_BYTES_PER_MS * 8) / 1000} Mbit/s, the rate an unmeasured download is weighed at`
    : `at ${formatRate(/** @type {number} */ (c.net.bytesPerMs))}, measured here`;
}

// One term of cost().ms in which `better` pays `by` ms less than `worse`, in words, from better's side.
function termWords(term, by, better, worse) {
  if (term === "runs") {
    const runs = `${better.runs} expected ${better.runs === 1 ? "run" : "runs"}`;
    return `${formatMs(worse.run.ms - better.run.ms)} faster run x ${runs} (${span(by)})`;
  }
  if (term === "download") {
    if (better.cached)
      return `cached file (against ${megabytes(worse.bytes)} to download: ${span(by)} ${rateWords(worse)})`;
    const smaller =
      worse.bytes > better.bytes ? `${megabytes(worse.bytes - better.bytes)} smaller download` : "quicker download";
    return `${smaller} (${span(by)} ${rateWords(worse)})`;
  }
  return `${formatMs(by)} quicker session creation (${better.create.source})`;
}

/**
 * Which terms of cost().ms put step a (its cost()) before step b, in words a user reads: "over int4: its 51 ms
 * faster run x 1000 expected runs (51.3 s) outweighs int4's 6.3 MB smaller download (5.2 s at 10 Mbit/s, the
 * rate an unmeasured download is weighed at)". null where cost() does not order them: a software adapter's
 * unmeasured step (ranked late, which its own why says), or two steps whose runs are both unknown.
 * @param {ReturnType<typeof cost>} a @param {ReturnType<typeof cost>} b
 * @param {string} other step b's name ("int4", "fp32 on webgpu")
 * @returns {string|null}
 */
export function decision(a, b, other) {
  if (a.late || b.late || !Number.isFinite(a.run.ms)) return null;
  if (!Number.isFinite(b.run.ms)) return `over ${other}: ${other}'s run time is unknown (${b.run.source})`;
  const terms = /** @type {Array<[string, number]>} */ ([
    ["runs", a.runs * (b.run.ms - a.run.ms)],
    ["download", b.rankDownloadMs - a.rankDownloadMs],
    ["creation", a.create && b.create ? b.create.ms - a.create.ms : 0],
  ]);
  const gains = terms.filter(([, d]) => d > 0).sort((x, y) => y[1] - x[1]);
  const losses = terms.filter(([, d]) => d < 0).sort((x, y) => x[1] - y[1]);
  if (!gains.length) return `tied with ${other}: no term tells them apart`;
  const won = `its ${gains.map(([term, d]) => termWords(term, d, a, b)).join(" and its ")}`;
  if (!losses.length) return `over ${other}: ${won}`;
  const lost = losses.map(([term, d]) => termWords(term, -d, b, a)).join(" and its ");
  return `over ${other}: ${won} ${gains.length === 1 ? "outweighs" : "outweigh"} ${other}'s ${lost}`;
}
