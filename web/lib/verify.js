// First-use verification: run a session on the variant's reference inputs and compare with
// native onnxruntime's outputs for that same artifact, by the tolerance table `onnxport check` uses.
import { compareOutput, taskMetric, verdict } from "./compare.js";

// reference: {inputs, outputs} decoded tensors; tolerance: the table's entry for variant/runtime.
export async function verifySession(session, reference, tolerance, model) {
  const started = performance.now();
  const { outputs, runMs } = await session.run(reference.inputs);
  const compared = {};
  for (const [name, expected] of Object.entries(reference.outputs)) {
    compared[name] = outputs[name] ? compareOutput(outputs[name], expected, tolerance) : { missing: true };
  }
  const metricName = model.metric_output;
  const metric = metricName && outputs[metricName] && reference.outputs[metricName]
    ? taskMetric(model.task, outputs[metricName], reference.outputs[metricName]) : {};
  const missing = Object.entries(compared).find(([, o]) => o.missing);
  const reason = missing ? `output ${missing[0]} is missing` : verdict(compared, metric, tolerance);
  const worst = worstOutput(compared);
  return {
    ok: !reason, reason, runMs, ms: performance.now() - started,
    max_abs: worst?.max_abs ?? null,
    at: worst ? `${worst.name}[${(worst.first_mismatch?.index ?? []).join(", ")}]` : null,
  };
}

// The output that failed first (else the one furthest off), for the message.
function worstOutput(compared) {
  const entries = Object.entries(compared).filter(([, o]) => !o.missing && !o.shape_mismatch);
  const [name, o] = entries.find(([, e]) => e.first_mismatch) ?? entries.sort((a, b) => b[1].max_abs - a[1].max_abs)[0] ?? [];
  return name ? { name, ...o } : null;
}

export function wrongResultsMessage(runtime, check) {
  const where = check.max_abs !== null ? ` (max error ${formatError(check.max_abs)} at ${check.at}: ${check.reason})` : ` (${check.reason})`;
  return `${runtime} gave wrong results for this model on this device${where}`;
}

function formatError(value) {
  return value >= 0.01 ? value.toFixed(3) : value.toExponential(2);
}
