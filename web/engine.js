// Runs a model by its plan: each step is tried in order; a failure at download,
// session creation or first run is recorded and the next step is taken.
import { loadArtifact } from "./downloads.js";
import { serverInfer } from "./server-api.js";
import { dropWorker, workerFor } from "./workers.js";

const sessions = new Map(); // `${runtime}:${sha256}` -> {worker, id, info}
const chosen = new Map(); // model name -> step that worked

async function openSession(step, record, hooks) {
  const key = `${step.runtime}:${record.sha256}`;
  if (sessions.has(key)) return sessions.get(key);
  const { bytes, source, notes } = await loadArtifact(record, hooks.onProgress);
  for (const note of notes) hooks.onNote?.(note);
  const worker = workerFor(step.runtime);
  const info = await worker.call("init", { runtime: step.runtime, threads: step.threads ?? 1 });
  const created = await worker.call("create", { bytes }, [bytes]);
  const session = { worker, id: created.id, info, createMs: created.createMs, source };
  sessions.set(key, session);
  return session;
}

export async function runStep(model, step, feeds, hooks = {}) {
  if (step.runtime === "server") {
    const { outputs, runMs } = await serverInfer(model.name, step.variant, feeds);
    return { outputs, runMs, runtime: "server", variant: step.variant };
  }
  const record = model.variants[step.variant];
  const session = await openSession(step, record, hooks);
  const { outputs, runMs } = await session.worker.call("run", { session: session.id, feeds });
  return {
    outputs, runMs, runtime: step.runtime, variant: step.variant,
    threads: session.info.threads, createMs: session.createMs, source: session.source,
  };
}

export async function runWithPlan(model, plan, feeds, hooks = {}) {
  const attempts = [];
  const previous = chosen.get(model.name);
  const steps = previous && plan.steps.some((s) => same(s, previous))
    ? [previous, ...plan.steps.filter((s) => !same(s, previous))]
    : plan.steps;
  for (const step of steps) {
    hooks.onStep?.(step);
    try {
      const result = await runStep(model, step, feeds, hooks);
      chosen.set(model.name, step);
      return { ...result, step, attempts };
    } catch (error) {
      attempts.push({ step, error: error.message });
      hooks.onFailure?.(step, error);
      if (step.runtime !== "server") forget(step, model);
    }
  }
  const reasons = attempts.map((a) => `${a.step.runtime}/${a.step.variant}: ${a.error}`).join("; ");
  const failure = new Error(`every runtime failed for ${model.name}: ${reasons || "the plan is empty"}`);
  failure.attempts = attempts;
  throw failure;
}

function same(a, b) {
  return a.runtime === b.runtime && a.variant === b.variant;
}

function forget(step, model) {
  const record = model.variants[step.variant];
  if (record) sessions.delete(`${step.runtime}:${record.sha256}`);
  if (chosen.get(model.name) && same(chosen.get(model.name), step)) chosen.delete(model.name);
}

export function resetSessions() {
  sessions.clear();
  chosen.clear();
  dropWorker("webgpu");
  dropWorker("wasm");
}
