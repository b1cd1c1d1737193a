// First-use verification: run a session on the file's reference inputs and judge its outputs as
// `onnxport check` and the import do (judge.js): a file that computes in fp32 element by element
// against native onnxruntime's outputs for that same file, within the runtime's floor; an fp16 or
// int8 file by its task metric against the fp32 variant's reference outputs, within its budget, the
// element-wise difference to its own reference kept as a diagnostic. Every reference file holds the
// same inputs (golden set 0, the same rows); when the fp32 one's differ (or there is none), the file
// is judged element by element against its own reference by the table's row for its variant.
import { judgeRun } from "./judge.js";

/**
 * @param session an open session (session.js)
 * @param {object} args
 * @param {object} args.model the manifest's model entry (task, metric_output)
 * @param {{inputs: object, outputs: object}} args.reference the file's reference, decoded
 * @param {{inputs: object, outputs: object}|null} args.fp32Reference the fp32 variant's, decoded (null for an fp32 file)
 * @param {{arithmetic: string, budget: object|null, floor: object, tolerance: object|null}} args.rule
 *   judge.js judgementRule: what the file computes, its budget, the runtime's floor and the table's row
 */
export async function verifySession(session, { model, reference, fp32Reference, rule }) {
  const started = performance.now();
  const { outputs, runMs } = await session.run(reference.inputs);
  const judged = judgeVerification(outputs, { model, reference, fp32Reference, rule });
  const worst = worstOutput(judged.outputs ?? {});
  return {
    ok: judged.ok, reason: judged.reason, basis: judged.basis, rule: judged.rule, metric: judged.metric,
    diagnostic: judged.diagnostic, runMs, ms: performance.now() - started,
    max_abs: worst?.max_abs ?? null,
    at: worst ? `${worst.name}[${(worst.first_mismatch?.index ?? []).join(", ")}]` : null,
  };
}

/**
 * The judgement of a verification run's outputs; `rule` in the answer says which applied:
 * "floor" (an fp32 file), "budget" (against fp32's reference) or "table" (the fallback).
 */
export function judgeVerification(outputs, { model, reference, fp32Reference, rule }) {
  const run = { got: outputs, sameVariant: reference.outputs };
  if (rule.arithmetic === "fp32") return { ...judgeRun(model, rule, run), rule: "floor" };
  if (rule.budget && fp32Reference && sameTensors(reference.inputs, fp32Reference.inputs)) {
    return { ...judgeRun(model, rule, { ...run, fp32: fp32Reference.outputs }), rule: "budget" };
  }
  if (!rule.tolerance) throw new Error("no fp32 reference on the same inputs, and no tolerance for this variant in the server's table");
  return { ...judgeRun(model, { arithmetic: "fp32", budget: null, floor: rule.tolerance }, run), rule: "table" };
}

// Same names, types, shapes and values (NaN equal to NaN): the two files were run on the same inputs.
export function sameTensors(a, b) {
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  return names.every((name) => {
    const x = a[name], y = b[name];
    if (!y || x.type !== y.type || x.dims.join(",") !== y.dims.join(",") || x.data.length !== y.data.length) return false;
    for (let i = 0; i < x.data.length; i++) {
      if (x.data[i] !== y.data[i] && !(Number.isNaN(x.data[i]) && Number.isNaN(y.data[i]))) return false;
    }
    return true;
  });
}

// The output that failed first (else the one furthest off), for the message.
function worstOutput(compared) {
  const entries = Object.entries(compared).filter(([, o]) => !o.shape_mismatch);
  const [name, o] = entries.find(([, e]) => e.first_mismatch) ?? entries.sort((a, b) => b[1].max_abs - a[1].max_abs)[0] ?? [];
  return name ? { name, ...o } : null;
}

export function wrongResultsMessage(runtime, check) {
  if (check.basis === "budget") return `${runtime} gave wrong results for this model on this device (${check.reason}, against fp32's reference outputs)`;
  const where = check.max_abs !== null ? ` (max error ${formatError(check.max_abs)} at ${check.at}: ${check.reason})` : ` (${check.reason})`;
  return `${runtime} gave wrong results for this model on this device${where}`;
}

function formatError(value) {
  return value >= 0.01 ? value.toFixed(3) : value.toExponential(2);
}

/**
 * The words of an onnxruntime-web error that say what failed, without its call site: Firefox's WebGPU on
 * lavapipe fails minilm fp16 with "failed to call OrtRun(). ERROR_CODE: 1, ERROR_MESSAGE: /…/buffer_manager.cc:525
 * void …Upload(…) const [ONNXRuntimeError] : 1 : FAIL : Failed to create a WebGPU compute pipeline: ShaderModule
 * with 'Clip' label is invalid", of which the last part is the engine's reason.
 * @param {string} message
 */
export function engineError(message) {
  const text = String(message ?? "").trim();
  const ort = /\[ONNXRuntimeError\] : \d+ : \w+ : ([\s\S]+)$/.exec(text);
  const reason = ort ? ort[1] : text.replace(/^failed to call OrtRun\(\)\. ERROR_CODE: \d+, ERROR_MESSAGE: /, "");
  return reason.trim().replace(/\s+/g, " ") || text;
}

// Failures that depend on what else the page holds or does, not on the (file, runtime, device): not remembered.
const TRANSIENT = /out of memory|allocation failed|device (?:is |was )?lost|the worker was stopped|worker failed/i;

/**
 * Whether a session's failure on a runtime is a verdict on the (file, runtime, device) to remember, as a wrong
 * result is: the engine refused the model or failed its run. Running out of memory or losing the GPU device is not.
 * @param {string} message
 */
export function lastingFailure(message) {
  return !TRANSIENT.test(String(message ?? ""));
}
