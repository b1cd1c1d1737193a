// Compare a runtime's outputs with a reference: the element rule of the tolerance table the
// server publishes (/api/tolerances, from server/onnxport/accuracy/browser_tolerances.py), the task
// metrics and the budget check. The one judgement built on them is judgement.js.
// The rules are the Python ones (onnxport.accuracy.compare, measure, budgets), checked on the same
// vectors (tests/vectors/compare_vectors.json, tests/vectors/judgement_vectors.json).
// A float element e (expected), g (got) passes when both are NaN, or both the same infinity, or
// both finite and |e - g| <= abs, or both finite with the same sign and max(g/e, e/g) <= 1 + rel
// (rel is a relative error, 1e-6, not onnxruntime-web's ratio form 1.000001). Integer and bool
// outputs must be equal.
import { cosine, row } from "../tensors/tensors.js";
import { reasonNumber } from "./reasons.js";

// A bound left at null is not applied; with both null, float elements are not judged at all
// (as in Python). The ratio is computed as Python computes it, so boundaries round alike.
export function passes(e, g, tol) {
  if (Number.isNaN(e) && Number.isNaN(g)) return true;
  if (e === g) return true; // equal values pass whatever the bounds (0 and 0 have no ratio)
  if (!Number.isFinite(e) || !Number.isFinite(g)) return false; // inf only equals the same inf
  if (tol.abs != null && Math.abs(e - g) <= tol.abs) return true;
  const ratio = g / e;
  return tol.rel != null && ratio > 0 && Math.max(ratio, 1 / ratio) <= 1 + tol.rel;
}

function elementwise(tol) {
  return tol != null && (tol.abs != null || tol.rel != null);
}

// Integer and bool elements: equal values, whether they come as numbers, bigints or booleans.
function sameInteger(e, g) {
  if (typeof e === "bigint" || typeof g === "bigint") {
    try {
      return BigInt(e) === BigInt(g);
    } catch {
      return false; // a non-integer number (or NaN) never equals an integer
    }
  }
  return Number(e) === Number(g);
}

function multiIndex(flat, dims) {
  const index = [];
  for (let i = dims.length - 1; i >= 0; i--) {
    index.unshift(flat % dims[i]);
    flat = Math.floor(flat / dims[i]);
  }
  return index;
}

function isExact(type) {
  return !type.startsWith("float");
}

// Figures of one output against its reference, as Python's compare.output_errors: max/mean absolute
// and max relative error over the elements where both the difference and the reference are finite,
// new inf/NaN values, the reference's largest finite magnitude (`scale`), integer mismatches, and the
// first element the tolerance refuses (integer and bool elements must be equal whatever it says).
export function compareOutput(got, expected, tol) {
  const report = { max_abs: 0, mean_abs: 0, max_rel: 0, nonfinite: 0, scale: 0, elements: expected.data.length };
  if (got.dims.join(",") !== expected.dims.join(",")) {
    report.shape_mismatch = { expected: expected.dims, got: got.dims };
    return report;
  }
  const exact = isExact(expected.type);
  const judged = elementwise(tol);
  let sum = 0,
    counted = 0,
    mismatches = 0;
  for (let i = 0; i < expected.data.length; i++) {
    const e = Number(expected.data[i]);
    const g = Number(got.data[i]);
    if (Number.isFinite(e)) {
      report.scale = Math.max(report.scale, Math.abs(e));
      if (!Number.isFinite(g)) report.nonfinite += 1;
    }
    // NaN against NaN and an infinity against the same infinity are no difference.
    const diff = (Number.isNaN(e) && Number.isNaN(g)) || (!Number.isFinite(e) && e === g) ? 0 : Math.abs(e - g);
    if (Number.isFinite(diff) && Number.isFinite(e)) {
      report.max_abs = Math.max(report.max_abs, diff);
      report.max_rel = Math.max(report.max_rel, diff / Math.max(Math.abs(e), 1e-12));
      sum += diff;
      counted += 1;
    }
    const ok = exact ? sameInteger(expected.data[i], got.data[i]) : !judged || passes(e, g, tol);
    if (exact && !ok) mismatches += 1;
    if (!ok && !report.first_mismatch) {
      report.first_mismatch = { index: multiIndex(i, expected.dims), expected: finiteOrText(e), got: finiteOrText(g) };
    }
  }
  report.mean_abs = counted ? sum / counted : 0;
  if (exact) report.mismatches = mismatches;
  return report;
}

function finiteOrText(v) {
  return Number.isFinite(v) ? v : String(v);
}

// The task metric of one output, as Python's compare.task_metric (note the argument order: got
// first): top-1 agreement for classifiers, worst and mean cosine for embeddings, per-step top-1
// agreement for sequences, mean and max error scaled by the reference's range for detection maps,
// the scaled max error for any other task. {} for a missing output or a shape mismatch.
export function taskMetric(task, got, expected) {
  if (!got || !expected || got.dims.join(",") !== expected.dims.join(",")) return {};
  if (task === "classification") return { top1_agreement: lastAxisAgreement(got, expected) };
  if (task === "embedding") {
    const rows = expected.dims[0] ?? 1;
    const cosines = [];
    for (let r = 0; r < rows; r++) cosines.push(cosine(row(expected, r), row(got, r)));
    return { cosine_min: Math.min(...cosines), cosine_mean: cosines.reduce((a, b) => a + b, 0) / cosines.length };
  }
  // One flipped pixel must not fail a heat map that is thresholded downstream: judge the mean.
  if (task === "detection-map")
    return { scaled_mean_abs: scaled(expected, got, "mean"), scaled_max_abs: scaled(expected, got, "max") };
  // Recognizers decode the top class at every step: the share of steps that keep it.
  if (task === "sequence") return { step_agreement: expected.data.length ? lastAxisAgreement(got, expected) : 1 };
  return { scaled_max_abs: scaled(expected, got, "max") };
}

// Share of positions (all axes but the last) whose top class along the last axis agrees: one per row
// of [batch, classes], one for a 1-D output, one per step of [batch, steps, classes].
function lastAxisAgreement(got, expected) {
  const width = expected.dims.at(-1) ?? 1;
  const positions = width ? expected.data.length / width : 0;
  let agree = 0;
  for (let p = 0; p < positions; p++)
    agree += argmaxAt(got.data, p * width, width) === argmaxAt(expected.data, p * width, width) ? 1 : 0;
  return agree / positions;
}

// numpy's argmax: the first largest value, and a NaN counts as the largest.
function argmaxAt(data, start, width) {
  let best = 0;
  for (let i = 0; i < width; i++) {
    const v = Number(data[start + i]);
    if (Number.isNaN(v)) return i;
    if (v > Number(data[start + best])) best = i;
  }
  return best;
}

// Largest (or mean) absolute error divided by the reference's largest finite magnitude; any
// non-finite difference makes it infinite.
function scaled(expected, got, reduce) {
  let scale = 0,
    worst = 0,
    sum = 0;
  for (let i = 0; i < expected.data.length; i++) {
    const e = Number(expected.data[i]);
    const diff = Math.abs(e - Number(got.data[i]));
    if (Number.isFinite(e)) scale = Math.max(scale, Math.abs(e));
    if (!Number.isFinite(diff)) return Infinity;
    worst = Math.max(worst, diff);
    sum += diff;
  }
  if (!expected.data.length) return 0;
  return (reduce === "max" ? worst : sum / expected.data.length) / Math.max(scale, 1e-12);
}

// The outputs the task metric reads (Python measure._metric_outputs). A detector's heads (scores,
// boxes, landmarks) are read together downstream, so detection-map judges every float output.
export function metricOutputs(task, metricOutput, reference) {
  if (task === "detection-map")
    return Object.entries(reference)
      .filter(([, t]) => t.type.startsWith("float"))
      .map(([name]) => name);
  return metricOutput in reference ? [metricOutput] : [];
}

// Several outputs' metrics as one (Python measure._merge_metrics): the worst of the minima and of
// the scaled errors, the mean of the rest.
export function mergeMetrics(metrics) {
  if (!metrics.length) return {};
  const merged = {};
  for (const key of Object.keys(metrics[0])) {
    const values = metrics.filter((m) => key in m).map((m) => m[key]);
    if (key.endsWith("_min")) merged[key] = Math.min(...values);
    else if (key.startsWith("scaled_")) merged[key] = Math.max(...values);
    else merged[key] = values.reduce((a, b) => a + b, 0) / values.length;
  }
  return merged;
}

// Python's budgets.shortfall: null when the metric is within the bound, else the reason as data
// (reasons.js renders it). `against` names the reference ("fp32" or "server_run"), `limit` the bound
// ("budget", or "floor" for fp32).
const BOUND_RULES = [
  // [task, or null for any other; metric key; budget field; "min" or "max"; reason code]
  ["classification", "top1_agreement", "top1_min", "min", "top1_below_bound"],
  ["embedding", "cosine_min", "cosine_min", "min", "cosine_below_bound"],
  ["sequence", "step_agreement", "top1_min", "min", "step_agreement_below_bound"],
  ["detection-map", "scaled_mean_abs", "scaled_mean_abs", "max", "mean_error_above_bound"],
  [null, "scaled_max_abs", "scaled_max_abs", "max", "max_error_above_bound"],
];

export function budgetCheck(budget, task, metric, { against = "fp32", limit = "budget" } = {}) {
  // The first rule that applies decides, as Python's elif chain.
  for (const [ruleTask, key, field, kind, code] of BOUND_RULES) {
    if (ruleTask !== null && task !== ruleTask) continue;
    if (metric[key] === undefined || budget[field] == null) continue;
    const value = metric[key];
    // NaN fails every bound (the comparisons are written so that it does).
    if (kind === "min" ? value >= budget[field] : value <= budget[field]) return null;
    return { code, value: reasonNumber(value), bound: budget[field], against, limit };
  }
  return null;
}
