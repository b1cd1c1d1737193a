// The browser part of `onnxport bench` (and of the performance page): cold start, cached
// start and warm runs of each variant in each browser runtime, on the same batch-1 inputs.
import { decodeTensors } from "./tensors.js";
import { clearCache, loadArtifact } from "./downloads.js";
import { manifest } from "./manifest.js";
import { probe } from "./probe.js";
import { dropWorker, initArgs, workerFor } from "./workers.js";


function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  return { median_ms: median, p90_ms: sorted[Math.min(sorted.length - 1, Math.round(0.9 * (sorted.length - 1)))], runs: sorted.length };
}

async function start(runtime, record, feeds, device) {
  // A fresh worker each time: session creation and the WebAssembly start-up are part of a start.
  dropWorker(`bench-${runtime}`);
  const worker = workerFor(`bench-${runtime}`);
  const began = performance.now();
  const { bytes, source } = await loadArtifact(record);
  const loadedAt = performance.now();
  const info = await worker.call("init", initArgs(runtime, device));
  const created = await worker.call("create", { bytes }, [bytes]);
  const first = await worker.call("run", { session: created.id, feeds });
  return {
    worker, session: created.id, info, source,
    timing: { total_ms: performance.now() - began, load_ms: loadedAt - began, create_ms: created.createMs, first_run_ms: first.runMs },
  };
}

export async function runBench({ models, runtimes, encodedInputs, runs = 20, webgpuRuns = 3 }) {
  const [built, device] = await Promise.all([manifest(), probe()]);
  const results = [];
  for (const name of models) {
    const model = built.models[name];
    const feeds = decodeTensors(encodedInputs[name]);
    for (const [variant, record] of Object.entries(model.variants)) {
      if (record.status !== "ok") continue;
      for (const runtime of runtimes) {
        const base = { model: name, variant, runtime, bytes: record.bytes };
        if (runtime === "webgpu" && (!device.webgpu || (record.precision === "fp16" && !device.shaderF16))) {
          results.push({ ...base, status: "skipped", reason: device.webgpu ? "no shader-f16" : device.webgpuReason });
          continue;
        }
        try {
          await clearCache();
          const cold = await start(runtime, record, feeds, device);
          const cached = await start(runtime, record, feeds, device);
          const samples = [];
          const count = runtime === "webgpu" ? webgpuRuns : runs;
          for (let i = 0; i < count; i++) samples.push((await cached.worker.call("run", { session: cached.session, feeds })).runMs);
          results.push({
            ...base, status: "ok", threads: cached.info.threads,
            cold: cold.timing, cached: { ...cached.timing, source: cached.source }, warm: summarize(samples),
          });
        } catch (error) {
          results.push({ ...base, status: "error", reason: error.message });
        } finally {
          dropWorker(`bench-${runtime}`);
        }
      }
    }
  }
  return { device, results };
}

// Per-operator kernel time (ms per run) from onnxruntime-web's profiler, to set beside native's.
export async function profileOperators({ model, variant, runtime, encodedInputs, runs = 5 }) {
  const [built, device] = await Promise.all([manifest(), probe()]);
  const record = built.models[model].variants[variant];
  const feeds = decodeTensors(encodedInputs);
  dropWorker("profile");
  const worker = workerFor("profile");
  try {
    await worker.call("init", initArgs(runtime, device));
    const { bytes } = await loadArtifact(record);
    const created = await worker.call("create", { bytes, profile: true }, [bytes]);
    await worker.call("run", { session: created.id, feeds }); // warm-up, profiled too: subtracted below
    await worker.call("logs");
    for (let i = 0; i < runs; i++) await worker.call("run", { session: created.id, feeds });
    await worker.call("endProfiling", { session: created.id });
    return kernelTimes(await worker.call("logs"), runs);
  } finally {
    dropWorker("profile");
  }
}

function kernelTimes(lines, runs) {
  const perOp = {};
  for (const line of lines) {
    const at = line.indexOf("{");
    if (at < 0 || !line.includes("_kernel_time")) continue;
    let event;
    try {
      event = JSON.parse(line.slice(at).replace(/,\s*$/, ""));
    } catch {
      continue;
    }
    const op = event.args?.op_name;
    if (op) perOp[op] = (perOp[op] ?? 0) + event.dur / 1000 / runs;
  }
  return perOp;
}
