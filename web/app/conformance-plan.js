// Which rows a conformance run makes: every served variant, and each of its forms, in each runtime, except on a
// software WebGPU adapter (SwiftShader, lavapipe), where the GPU runtime gets one row per model unless the whole
// matrix is asked for (`onnxport check --full-webgpu`, `?full_webgpu=1`): there a row of a 12 MB detector
// took 45 s, and a default check of two small models ran past 15 minutes.
import { served } from "../lib/index.js";
import { AS_BUILT, cannotRun, runtime as runtimeRow, servedForms } from "../lib/internal.js";

/**
 * The jobs, in run order, and what became of the GPU runtime's rows, which the report calls its webgpu_scope:
 * {scope: "full"} or {scope: "one per model", adapter, chosen: {model: variant}, left_out}.
 */
export function planJobs(built, names, runtimes, device, { fullWebgpu = false } = {}) {
  const gpuRuntime = runtimes.find((runtime) => runtimeRow(runtime)?.gpu);
  const reduced = Boolean(gpuRuntime) && !fullWebgpu && Boolean(device.webgpu && device.adapter?.fallback);
  const webgpu = reduced
    ? { scope: "one per model", adapter: adapterName(device.adapter), chosen: {}, left_out: 0 }
    : { scope: "full" };
  const jobs = [];
  for (const name of names) {
    const model = built.models[name];
    if (!model)
      throw new Error(
        `no model ${JSON.stringify(name)} in the manifest; models: ${Object.keys(built.models).join(", ")}`,
      );
    // A model the adapter can run no variant of keeps one row, `skipped` with the reason.
    const pick = reduced ? (gpuVariant(model, gpuRuntime, device) ?? served(model)[0]) : null;
    if (pick) webgpu.chosen[name] = pick;
    for (const variant of served(model)) {
      for (const runtime of runtimes) {
        const forms = [[AS_BUILT, model.variants[variant]], ...servedForms(model.variants[variant], runtime)];
        const kept = reduced && runtimeRow(runtime)?.gpu ? (variant === pick ? forms.slice(0, 1) : []) : forms;
        if (reduced) webgpu.left_out += forms.length - kept.length;
        for (const [form, record] of kept) jobs.push({ model, variant, form, record, runtime });
      }
    }
  }
  return { jobs, webgpu };
}

// The one GPU row of a model on a software adapter: fp32 when the adapter can run it (the arithmetic judged
// element by element, so a wrong kernel shows; it cost no more there than int8 did, where int4 cost twice as
// much), else the smallest served variant it can run; null when it can run none.
function gpuVariant(model, runtime, device) {
  const runnable = served(model).filter((v) => !cannotRun(runtime, model.variants[v], device));
  if (runnable.includes("fp32")) return "fp32";
  return (
    runnable.sort((a, b) => (model.variants[a].bytes ?? Infinity) - (model.variants[b].bytes ?? Infinity))[0] ?? null
  );
}

function adapterName(adapter) {
  return adapter.architecture || adapter.description || adapter.vendor || "unnamed";
}
