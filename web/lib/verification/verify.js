// First-use verification: run a session on the file's reference inputs and judge its outputs as
// `onnxport check` and the import do (judgement.js): a file that computes in fp32 element by element
// against native onnxruntime's outputs for that same file, within the runtime's floor; an fp16 or
// int8 file by its task metric against the fp32 variant's reference outputs, within its budget, the
// element-wise difference to its own reference kept as a diagnostic. Every reference file holds the
// same inputs (golden set 0, the same rows); when the fp32 one's differ (or there is none), the file
// is judged element by element against its own reference by the table's row for its variant.
//
// A verdict is remembered for the (file, runtime, onnxruntime-web version, device) (choice/artifact-verdicts.js):
// a remembered pass is not run again in "first-use" mode, and the plan skips a remembered failure without
// downloading it.
import { probe } from "../choice/probe.js";
import { remember, remembered } from "../choice/artifact-verdicts.js";
import { arithmeticOf, judgementRule, judgeRun } from "./judgement.js";
import { renderReason } from "./reasons.js";

/**
 * A loaded step's verification, as load() is told (verify: "first-use", "always" or "off"): a pass remembered on
 * this device stands in "first-use" mode; otherwise verifyStep's, remembered. Rejects with wrongResult's error
 * when the outputs are wrong, and with failedStep's when the engine fails the run.
 * @param session an open session (session.js)
 * @param {{runtime: string, key: string, variant: string}} step
 * @param {{mode: string, ortVersion: string} & Parameters<typeof verifyStep>[2]} args
 */
export async function verifyOnLoad(session, step, { mode, ortVersion, ...args }) {
  if (mode === "off") return { status: "off" };
  const device = await probe();
  const version = session.info.version ?? ortVersion;
  if (mode === "first-use") {
    const known = remembered(args.record.sha256, step.key, version, device);
    if (known?.ok) return { status: "remembered", at: known.at, max_abs: known.max_abs };
  }
  let verification;
  try {
    verification = await verifyStep(session, step, args);
  } catch (error) {
    if (error instanceof EngineFailure) throw await failedStep(step, args.record, session, error.cause, ortVersion);
    throw error;
  }
  if (verification.status === "unavailable") return verification;
  const { ok, reason, max_abs, basis } = verification;
  remember(args.record.sha256, step.key, version, device, { ok, reason, max_abs, basis });
  if (!ok) throw wrongResult(verification);
  return verification;
}

/**
 * The error a step's engine failure becomes (session null: creating the session failed), its verdict remembered
 * unless the failure depends on the moment (memory, a lost GPU device): the plan then skips the pair on this
 * device without downloading it again. `stage` is the engine error's ("init", "create") or null; `lasting`: it was
 * remembered (fleet reports count it too).
 * @param {{runtime: string, key: string}} step @param {{sha256: string}} record
 * @param {{info: {version?: string|null}}|null} session @param {Error & {stage?: string}} error @param {string} ortVersion
 */
export async function failedStep(step, record, session, error, ortVersion) {
  const reason = engineFailureReason(step.runtime, session ? "its first run" : "creating a session", error.message);
  if (lastingFailure(error.message)) {
    const version = session?.info.version ?? ortVersion;
    remember(record.sha256, step.key, version, await probe(), { ok: false, reason, max_abs: null, basis: "error" });
  }
  return Object.assign(new Error(reason), { stage: error.stage ?? null, lasting: lastingFailure(error.message) });
}

/** An engine's own failure in a verification run (not a wrong result): `cause` is the engine's error. */
export class EngineFailure extends Error {
  /** @param {Error} cause */
  constructor(cause) {
    super(cause.message);
    this.cause = cause;
  }
}

/**
 * One plan step's first-use verification: the session run on its file's reference inputs and judged as the
 * import judged the variant (judgement.js), by what its file computes; an fp16 or int8 file against the fp32
 * variant's reference outputs, within its budget. The verification names its status: "passed" or "failed"
 * (with `ok`, `reason`, the measured differences and the rule), or "unavailable" (no reference to run).
 * Throws EngineFailure when the engine itself fails the run.
 * @param session an open session (session.js)
 * @param {{runtime: string, key: string, variant: string}} step
 * @param {object} args
 * @param {import("../files/manifest.js").ModelEntry} args.model the manifest's model entry
 * @param {import("../files/manifest.js").VariantRecord} args.record the file the session runs (forms.js fileRecord)
 * @param {(record: Partial<import("../files/manifest.js").VariantRecord>) => Promise<{inputs: object, outputs: object, bytes: number}|null>} args.reference
 *   a record's reference file, decoded (null: it has none; downloads.js loadReference)
 * @param {() => Promise<Record<string, import("./judgement.js").Tolerance>>} args.tolerances the server's tolerance table
 */
export async function verifyStep(session, step, { model, record, reference, tolerances }) {
  const [own, table, fp32Reference] = await Promise.all([
    reference(record),
    tolerances(),
    arithmeticOf(model.variants[step.variant]) === "fp32" ? null : reference(model.variants.fp32 ?? {}),
  ]);
  const rule = judgementRule(model, step.variant, step.key, table);
  if (!own)
    return {
      status: "unavailable",
      reason: "the manifest has no reference outputs for this file (built by an older onnxport)",
    };
  if (!rule.floor) throw new Error(`no floor for fp32/${step.key} in the server's table`);
  let check;
  try {
    check = await verifySession(session, { model, reference: own, fp32Reference, rule });
  } catch (error) {
    // An engine's own failure (Firefox's WebGPU on lavapipe: "Failed to create a WebGPU compute pipeline:
    // ShaderModule with 'Clip' label is invalid" at minilm fp16's first run) is remembered like a wrong result.
    throw new EngineFailure(error);
  }
  return {
    status: check.ok ? "passed" : "failed",
    ok: check.ok,
    reason: check.ok ? null : wrongResultsMessage(step.runtime, check),
    max_abs: check.max_abs,
    basis: check.basis,
    rule: check.rule,
    budget: check.basis === "budget" ? rule.budget : null,
    metric: check.metric,
    diagnostic: check.diagnostic,
    ms: check.ms,
    runMs: check.runMs,
    bytes: own.bytes,
  };
}

/**
 * The error a failed verification becomes: `wrong` (a wrong result, not a failure to run) and the verification.
 * @param {{reason: string}} verification
 */
export function wrongResult(verification) {
  const error = /** @type {Error & {wrong?: boolean, verification?: object}} */ (new Error(verification.reason));
  error.wrong = true;
  error.verification = verification;
  return error;
}

/**
 * Why a runtime failed a step, in words: "webgpu failed its first run on this device: <the engine's reason>".
 * @param {string} runtime @param {string} stage "its first run" or "creating a session" @param {string} message
 */
export function engineFailureReason(runtime, stage, message) {
  return `${runtime} failed ${stage} on this device: ${engineError(message)}`;
}

/**
 * @param session an open session (session.js)
 * @param {object} args
 * @param {object} args.model the manifest's model entry (task, metric_output)
 * @param {{inputs: object, outputs: object}} args.reference the file's reference, decoded
 * @param {{inputs: object, outputs: object}|null} args.fp32Reference the fp32 variant's, decoded (null for an fp32 file)
 * @param {{arithmetic: string, budget: object|null, floor: object, tolerance: object|null}} args.rule
 *   judgement.js judgementRule: what the file computes, its budget, the runtime's floor and the table's row
 */
export async function verifySession(session, { model, reference, fp32Reference, rule }) {
  const started = performance.now();
  const { outputs, runMs } = await session.run(reference.inputs);
  const judged = judgeVerification(outputs, { model, reference, fp32Reference, rule });
  const worst = worstOutput(judged.outputs ?? {});
  return {
    ok: judged.ok,
    reason: judged.reason ? renderReason(judged.reason) : null, // shown, and remembered, in words
    basis: judged.basis,
    rule: judged.rule,
    metric: judged.metric,
    diagnostic: judged.diagnostic,
    runMs,
    ms: performance.now() - started,
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
  if (!rule.tolerance)
    throw new Error("no fp32 reference on the same inputs, and no tolerance for this variant in the server's table");
  return { ...judgeRun(model, { arithmetic: "fp32", budget: null, floor: rule.tolerance }, run), rule: "table" };
}

// Same names, types, shapes and values (NaN equal to NaN): the two files were run on the same inputs.
export function sameTensors(a, b) {
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  return names.every((name) => {
    const x = a[name],
      y = b[name];
    if (!y || x.type !== y.type || x.dims.join(",") !== y.dims.join(",") || x.data.length !== y.data.length)
      return false;
    for (let i = 0; i < x.data.length; i++) {
      if (x.data[i] !== y.data[i] && !(Number.isNaN(x.data[i]) && Number.isNaN(y.data[i]))) return false;
    }
    return true;
  });
}

// The output that failed first (else the one furthest off), for the message.
function worstOutput(compared) {
  const entries = Object.entries(compared).filter(([, o]) => !o.shape_mismatch);
  const [name, o] =
    entries.find(([, e]) => e.first_mismatch) ?? entries.sort((a, b) => b[1].max_abs - a[1].max_abs)[0] ?? [];
  return name ? { name, ...o } : null;
}

export function wrongResultsMessage(runtime, check) {
  if (check.basis === "budget")
    return `${runtime} gave wrong results for this model on this device (${check.reason}, against fp32's reference outputs)`;
  const where =
    check.max_abs !== null
      ? ` (max error ${formatError(check.max_abs)} at ${check.at}: ${check.reason})`
      : ` (${check.reason})`;
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
