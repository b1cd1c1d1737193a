// The browser side of conformance, shared by the /conformance page and `onnxport check`:
// every served variant of every model, and each of its served forms, in each browser runtime,
// on the golden inputs, judged as the import judged the variant (web/lib/verification/judgement.js): a file that
// computes in fp32 element by element against the server's run of it, within onnxruntime-web's own
// floor; an fp16 or int8 file by its task metric against the server's fp32 on the same inputs,
// within its budget, with the element-wise difference to the server's run of it as a diagnostic.
// A form is the same model: it answers to its variant's arithmetic and budget.
import { deviceKind, probe } from "../lib/index.js";
import {
  ARRAYS,
  cannotRun,
  CHECKED,
  compareOutput,
  decodeTensors,
  dropWorker,
  encodeTensors,
  judgementRule,
  judgeRun,
  leadingRows,
  openSession,
  placement,
  renderReason,
  runtime as runtimeRow,
  serverInfer,
  taskMetric,
  threadCeiling,
} from "../lib/internal.js";
import { client } from "./client.js";
import { planJobs } from "./conformance-plan.js";

export const RUNTIMES = CHECKED;
export const REPORT_SCHEMA = Object.freeze({ schema: "onnxport.conformance", schema_version: 1 });

// rowTimeoutMs: a row that has no result by then is a `timeout` row (its worker is stopped) and the rest go on.
// fullWebgpu: every row on a software WebGPU adapter too, not one per model (conformance-plan.js).
// onStart(total, identity, plan): plan is {rows: each row's model, variant, form and runtime in run order,
// webgpu: what became of the GPU rows}, which `onnxport check` reads for its progress and its note on WebGPU.
export async function runConformance({
  models = null,
  runtimes = RUNTIMES,
  webgpuRows = 2,
  fullWebgpu = false,
  rowTimeoutMs = 0,
  onResult = () => {},
  onStart = () => {},
} = {}) {
  const [built, device, tolerances] = await Promise.all([client.manifest(), probe(), client.tolerances()]);
  const { jobs, webgpu } = planJobs(built, models ?? Object.keys(built.models), runtimes, device, { fullWebgpu });
  const identity = browserIdentity(device);
  const rows = jobs.map(({ model, variant, form, runtime }) => ({ model: model.name, variant, form, runtime }));
  onStart(jobs.length, identity, { rows, webgpu });
  const golden = new Map();
  const results = [];
  for (const job of jobs) {
    const started = performance.now();
    if (!golden.has(job.model.name)) golden.set(job.model.name, await modelFeeds(job.model));
    const rule = judgementRule(job.model, job.variant, job.runtime, tolerances);
    const result = await withinLimit(job, rowTimeoutMs, () =>
      checkOne(job, golden.get(job.model.name), rule, device, webgpuRows),
    );
    // The row's wall time, whatever its status: what the check's estimate of the time left is made of.
    result.row_ms = Math.round(performance.now() - started);
    results.push(result);
    onResult(result, results.length, jobs.length);
  }
  return {
    ...REPORT_SCHEMA,
    created: new Date().toISOString(),
    browser: identity,
    webgpu_scope: webgpu,
    tolerances,
    results,
  };
}

// The row's result, or a `timeout` row when it has none within `ms` (0: no limit). The row's worker is
// stopped, so its work does not hold up the rows after it; the next row starts a fresh one.
async function withinLimit(job, ms, check) {
  if (!ms) return check();
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => {
      dropWorker(`check-${job.runtime}`);
      resolve({
        model: job.model.name,
        variant: job.variant,
        ...labelKey(job.model, job.variant),
        form: job.form,
        runtime: job.runtime,
        task: job.model.task,
        sha256: job.record.sha256,
        status: "timeout",
        reason: `no result within the row's time limit of ${ms / 1000} s`,
      });
    }, ms);
  });
  try {
    return await Promise.race([check(), late]);
  } finally {
    clearTimeout(timer);
  }
}

// A model's golden inputs, or why its rows cannot run: {skip} (a tensor the browser side cannot carry)
// or {error} (the golden data did not load). Either is that model's rows only: the check goes on.
async function modelFeeds(model) {
  const uncarried = uncarriedTensor(model);
  if (uncarried) return { skip: uncarried };
  try {
    return { feeds: await goldenInputs(model.name) };
  } catch (error) {
    return { error: `golden inputs: ${error.message}` };
  }
}

// Why the browser side cannot hold this model's tensors, from the manifest (before any download), or null.
// A string input or output (numpy `object`) is the case met in the wild: the library's tensors, the golden
// data and the V2 JSON it sends are numeric and bool only (server/onnxport/check/skips.py says so for Python).
function uncarriedTensor(model) {
  for (const [kind, specs] of [
    ["input", model.inputs],
    ["output", model.outputs],
  ]) {
    for (const spec of specs ?? []) {
      if (Object.hasOwn(ARRAYS, spec.dtype)) continue;
      const what = spec.dtype === "object" ? "a string tensor (numpy object)" : `dtype ${spec.dtype}`;
      return `${kind} ${spec.name} is ${what}: the browser library carries numeric and bool tensors only`;
    }
  }
  return null;
}

async function checkOne({ model, variant, form, record, runtime }, golden, rule, device, webgpuRows) {
  const base = {
    model: model.name,
    variant,
    ...labelKey(model, variant),
    form,
    runtime,
    task: model.task,
    sha256: record.sha256,
    arithmetic: rule.arithmetic,
  };
  if (golden.skip) return { ...base, status: "skipped", reason: golden.skip };
  if (golden.error) return { ...base, status: "error", reason: golden.error };
  const feeds = golden.feeds;
  if (!rule.floor) return { ...base, status: "error", reason: `no floor for fp32/${runtime} in the tolerance table` };
  if (rule.arithmetic !== "fp32" && !rule.budget)
    return { ...base, status: "error", reason: `no budget for ${variant} (${rule.arithmetic})` };
  const row = runtimeRow(runtime);
  const cannot = cannotRun(runtime, model.variants[variant], device); // as the plan leaves it out
  if (cannot) return { ...base, status: "skipped", reason: cannot };
  const inputs = row?.gpu ? firstRows(model, feeds, webgpuRows) : feeds;
  const rows = Object.values(inputs)[0]?.dims?.[0] ?? 1;
  try {
    const reference = await serverInfer(client.inference, model.name, variant, inputs);
    // fp32's outputs on the same inputs: what an fp16 or int8 file is judged against.
    const fp32 =
      rule.arithmetic === "fp32"
        ? null
        : variant === "fp32"
          ? reference
          : await serverInfer(client.inference, model.name, "fp32", inputs);
    let browser;
    try {
      browser = await runInBrowser(runtime, record, inputs);
    } catch (error) {
      // Refused at session creation: the plan falls back, so no wrong answer reaches a user.
      if (error.stage === "create") return { ...base, status: "unsupported", reason: error.message, rows };
      throw error;
    }
    const judged = judgeRun(model, rule, {
      got: browser.outputs,
      fp32: fp32?.outputs ?? null,
      sameVariant: reference.outputs,
    });
    // Against the server's run of the same file, element by element (by the table's row for this
    // variant and runtime) and by the task metric: figures beside the verdict, as before it.
    const outputs = {};
    for (const [name, expected] of Object.entries(reference.outputs)) {
      outputs[name] = browser.outputs[name]
        ? compareOutput(browser.outputs[name], expected, rule.tolerance ?? rule.floor)
        : { missing: true };
    }
    const metricName = model.metric_output;
    const metric = metricName ? taskMetric(model.task, browser.outputs[metricName], reference.outputs[metricName]) : {};
    return {
      ...base,
      status: judged.ok ? "pass" : "fail",
      // The reason in the page's words, and as data: the check's report prints it in Python's
      // (server/onnxport/harness/conformance_page.py).
      reason: judged.reason ? renderReason(judged.reason) : null,
      reason_data: judged.reason,
      rows,
      outputs,
      metric,
      basis: judged.basis,
      budget: judged.basis === "budget" ? rule.budget : null,
      metric_vs_fp32: judged.basis === "budget" ? judged.metric : null,
      diagnostic: judged.diagnostic && { ...judged.diagnostic, text: renderReason(judged.diagnostic) },
      floor: rule.floor,
      tolerance: rule.tolerance,
      timings: {
        create_ms: browser.createMs,
        first_run_ms: browser.firstMs,
        warm_run_ms: browser.warmMs,
        server_ms: reference.runMs,
        fp32_server_ms: fp32 && fp32 !== reference ? fp32.runMs : null,
      },
      identity: {
        threads: browser.threads,
        onnxruntime_web: browser.version,
        adapter: row?.gpu ? device.adapter : null,
      },
      placement: row?.gpu ? placement(browser.logs) : null,
    };
  } catch (error) {
    return { ...base, status: "error", reason: error.message, rows };
  }
}

// {label} when what people are shown for the variant is not its key (the manifest's `label`: an already-int8
// model's fp32 is "original (int8)"), else nothing: `variant` stays the key the server and the verdicts use.
function labelKey(model, variant) {
  const label = model.variants[variant]?.label;
  return label && label !== variant ? { label } : {};
}

async function runInBrowser(runtime, record, feeds) {
  const verbose = Boolean(runtimeRow(runtime)?.gpu); // its log says where each node ran
  const { session } = await client.session(record, runtime, { worker: `check-${runtime}`, verbose });
  try {
    const first = await session.run(feeds);
    const warm = await session.run(feeds);
    return {
      outputs: first.outputs,
      createMs: session.createMs,
      firstMs: first.runMs,
      warmMs: warm.runMs,
      threads: session.info.threads,
      version: session.info.version,
      logs: session.logs,
    };
  } finally {
    await session.release();
  }
}

export async function goldenInputs(model) {
  const [first] = await client.golden(model);
  if (!first) throw new Error(`${model} has no golden data`);
  return first.inputs;
}

// WebGPU through SwiftShader is ~500x slower than native: check it on the first rows only, when the
// first dimension is a batch axis (the manifest's batch_axis: a 1-D sequence is not rows).
function firstRows(model, feeds, rows) {
  return model.batch_axis === true ? leadingRows(feeds, rows) : feeds;
}

function browserIdentity(device) {
  const { threads, why } = threadCeiling(device);
  return {
    device_kind: deviceKind(device),
    user_agent: device.userAgent,
    cross_origin_isolated: device.crossOriginIsolated,
    // Isolation alone does not give threads: an isolated WebKit page can lack SharedArrayBuffer.
    shared_memory: device.sharedMemory !== false,
    threads: { most: threads, why },
    hardware_concurrency: device.hardwareConcurrency,
    wasm_simd: device.wasmSimd,
    webgpu: device.webgpu,
    webgpu_reason: device.webgpuReason,
    adapter: device.adapter,
    shader_f16: device.shaderF16,
  };
}

export function releaseWorkers() {
  for (const runtime of RUNTIMES) dropWorker(`check-${runtime}`);
}

// `onnxport check --locate`: run a debug model (every intermediate value exposed as an
// output) and hand back every output, base64-encoded, for the server-side comparison.
export async function runDebugModel(url, runtime, encodedFeeds) {
  const response = await fetch(url, { cache: "no-store" });
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  const bytes = await response.arrayBuffer();
  const session = await openSession({
    bytes,
    runtime,
    device: await probe(),
    ortBase: client.ortBase,
    worker: `debug-${runtime}`,
  });
  try {
    const { outputs } = await session.run(decodeTensors(encodedFeeds));
    return encodeTensors(outputs);
  } finally {
    dropWorker(`debug-${runtime}`);
  }
}
