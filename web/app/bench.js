// The browser part of `onnxport bench` (and of the performance page): cold start, cached
// start and warm runs of each variant, and of each of its optimized forms (the plan picks a
// form by these figures: web/lib/choice/cost.js), in each browser runtime, on the same batch-1 inputs.
import { clearCache, probe } from "../lib/index.js";
import {
  AS_BUILT,
  cannotRun,
  decodeTensors,
  dropWorker,
  fileRecord,
  runtime as runtimeRow,
  servedForms,
} from "../lib/internal.js";
import { client } from "./client.js";

function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  return {
    median_ms: median,
    p90_ms: sorted[Math.min(sorted.length - 1, Math.round(0.9 * (sorted.length - 1)))],
    runs: sorted.length,
  };
}

// ahead: the runtime is started before the clock starts, as on a page that called
// client.startAhead() when it opened (its own start is still init_ms). The report calls that start
// `prepared` (docs/reference/manifest.md).
// stage(what) is told each part as it begins, so a start that never answers says which part hung.
async function start(runtime, record, feeds, { ahead = false, stage = () => {} } = {}) {
  // A fresh worker each time: session creation and the WebAssembly start-up are part of a start.
  dropWorker(`bench-${runtime}`);
  if (ahead) {
    stage("the runtime started ahead");
    await client.startRuntime(runtime, { worker: `bench-${runtime}` });
  }
  stage("bytes, runtime and session");
  const began = performance.now();
  const { session, source, stages } = await client.session(record, runtime, { worker: `bench-${runtime}` });
  stage("first run");
  const first = await session.run(feeds);
  // Stages: the runtime's start (init) runs beside reading the bytes (load = download or cache
  // read, plus verify); ready is when both are done; then create and the first run.
  return {
    session,
    source,
    timing: { total_ms: performance.now() - began, ...stages, create_ms: session.createMs, first_run_ms: first.runMs },
  };
}

// Every step (one variant or form in one runtime) in the order runBench takes them, the ones the plan would
// leave out with their reason (`cannot`), so a page can say "step k of n" before the first one starts.
export function benchSteps(built, device, { models, runtimes, variants = null }) {
  const steps = [];
  for (const name of models) {
    for (const [variant, served] of Object.entries(built.models[name].variants)) {
      if (served.status !== "ok" || (variants && !variants.includes(variant))) continue;
      for (const runtime of runtimes)
        for (const form of [AS_BUILT, ...servedForms(served, runtime).map(([f]) => f)]) {
          steps.push({
            model: name,
            variant,
            form,
            runtime,
            record: fileRecord(served, form),
            cannot: cannotRun(runtime, served, device),
          });
        }
    }
  }
  return steps;
}

// variants: only these (default: every served one), so `onnxport bench` can time-limit each variant on its own.
// onProgress(stage, where) is told each stage as it starts, so a caller can tell a bench that hangs from a slow
// one; where = {step, steps, model, variant, form, runtime, stage}: step k (from 1) of the `steps` that run.
// onStepDone(row, where) is told each step's row (ok, or error with its reason) as soon as it has one.
export async function runBench({
  models,
  runtimes,
  encodedInputs,
  runs = 20,
  webgpuRuns = 3,
  variants = null,
  onProgress = () => {},
  onStepDone = () => {},
}) {
  const [built, device] = await Promise.all([client.manifest(), probe()]);
  const steps = benchSteps(built, device, { models, runtimes, variants });
  const count = steps.filter((s) => !s.cannot).length;
  const feedsOf = new Map();
  const results = [];
  let done = 0;
  for (const { model: name, variant, form, runtime, record, cannot } of steps) {
    const base = { model: name, variant, form, runtime, bytes: record.bytes, sha256: record.sha256 };
    if (cannot) {
      // as the plan leaves it out
      results.push({ ...base, status: "skipped", reason: cannot });
      continue;
    }
    if (!feedsOf.has(name)) feedsOf.set(name, decodeTensors(encodedInputs[name]));
    const feeds = feedsOf.get(name);
    const where = { step: ++done, steps: count, model: name, variant, form: form ?? "as built", runtime };
    const stage = (what) =>
      onProgress(`${name} ${variant}/${form ?? "as built"} ${runtime}: ${what}`, { ...where, stage: what });
    let row;
    try {
      await clearCache();
      const cold = await start(runtime, record, feeds, { stage: (part) => stage(`cold start, ${part}`) });
      const cached = await start(runtime, record, feeds, { stage: (part) => stage(`cached start, ${part}`) });
      const samples = [];
      const warmRuns = runtimeRow(runtime)?.gpu ? webgpuRuns : runs;
      for (let i = 0; i < warmRuns; i++) {
        stage(`warm run ${i + 1} of ${warmRuns}`);
        samples.push((await cached.session.run(feeds)).runMs);
      }
      const startedAhead = await start(runtime, record, feeds, {
        ahead: true,
        stage: (part) => stage(`prepared start, ${part}`),
      });
      row = {
        ...base,
        status: "ok",
        threads: cached.session.info.threads,
        cold: cold.timing,
        cached: { ...cached.timing, source: cached.source },
        prepared: { ...startedAhead.timing, source: startedAhead.source },
        warm: summarize(samples),
      };
    } catch (error) {
      row = { ...base, status: "error", reason: error.message };
    } finally {
      dropWorker(`bench-${runtime}`);
    }
    results.push(row);
    onStepDone(row, where);
  }
  return { device, results };
}

// Per-operator kernel time (ms per run) from onnxruntime-web's profiler, to set beside native's.
export async function profileOperators({ model, variant, runtime, encodedInputs, runs = 5 }) {
  const built = await client.manifest();
  const record = built.models[model].variants[variant];
  const feeds = decodeTensors(encodedInputs);
  dropWorker("profile");
  try {
    const { session } = await client.session(record, runtime, { worker: "profile", profile: true });
    await session.run(feeds); // warm-up, profiled too: subtracted below
    await session.takeLogs();
    for (let i = 0; i < runs; i++) await session.run(feeds);
    return kernelTimes(await session.endProfiling(), runs);
  } finally {
    dropWorker("profile");
  }
}

// onnxruntime-web prints the whole trace at endProfiling(), the warm-up run's events included:
// they are left out, as the native profile does. The warm-up's first calls pay V8's lazy
// compilation of each kernel (a first Cast: 30-78 ms; warm: 0.01 ms; docs/notes/cast.md).
function kernelTimes(lines, runs) {
  const events = [];
  for (const line of lines) {
    const at = line.indexOf("{");
    if (at < 0) continue;
    try {
      events.push(JSON.parse(line.slice(at).replace(/,\s*$/, "")));
    } catch {
      // not a trace event
    }
  }
  const modelRuns = events.filter((e) => e.name === "model_run").sort((a, b) => a.ts - b.ts);
  const kernels = events.filter((e) => e.name?.endsWith("_kernel_time") && e.args?.op_name).sort((a, b) => a.ts - b.ts);
  const warmUp = modelRuns.length > runs ? modelRuns[0] : null;
  const timed = warmUp
    ? kernels.filter((e) => e.ts < warmUp.ts || e.ts > warmUp.ts + warmUp.dur)
    : kernels.slice(Math.round(kernels.length / (runs + 1))); // no run events: the first run's share
  const perOp = {};
  for (const event of timed) perOp[event.args.op_name] = (perOp[event.args.op_name] ?? 0) + event.dur / 1000 / runs;
  return perOp;
}
