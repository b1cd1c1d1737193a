// Compare a browser runtime's outputs with the server's, by the tolerance table the
// server publishes (/api/tolerances, from server/onnxport/accuracy/tolerances.py).
// The rule is the Python one (onnxport.accuracy.compare), checked on the same vectors
// (tests/data/compare_vectors.json). A float element e (expected), g (got) passes when
// both are NaN, or both the same infinity, or both finite and |e - g| <= abs, or both
// finite with the same sign and max(g/e, e/g) <= 1 + rel (rel is a relative error, 1e-6,
// not onnxruntime-web's ratio form 1.000001). Integer and bool outputs must be equal.
import { argmax, cosine, row } from "./tensors.js";

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

export function compareOutput(got, expected, tol) {
  const report = { max_abs: 0, max_rel: 0, nonfinite: 0, elements: expected.data.length };
  if (got.dims.join(",") !== expected.dims.join(",")) {
    report.shape_mismatch = { expected: expected.dims, got: got.dims };
    return report;
  }
  const exact = isExact(expected.type);
  const judged = elementwise(tol);
  for (let i = 0; i < expected.data.length; i++) {
    const e = Number(expected.data[i]);
    const g = Number(got.data[i]);
    if (Number.isFinite(e) && !Number.isFinite(g)) report.nonfinite += 1;
    const diff = Number.isNaN(e) && Number.isNaN(g) ? 0 : Math.abs(e - g);
    if (Number.isFinite(diff)) {
      report.max_abs = Math.max(report.max_abs, diff);
      report.max_rel = Math.max(report.max_rel, diff / Math.max(Math.abs(e), 1e-12));
    }
    const ok = exact ? sameInteger(expected.data[i], got.data[i]) : !judged || passes(e, g, tol);
    if (!ok && !report.first_mismatch) {
      report.first_mismatch = { index: multiIndex(i, expected.dims), expected: finiteOrText(e), got: finiteOrText(g) };
    }
  }
  return report;
}

function finiteOrText(v) {
  return Number.isFinite(v) ? v : String(v);
}

export function taskMetric(task, got, expected) {
  if (!got || !expected || got.dims.join(",") !== expected.dims.join(",")) return {};
  const rows = expected.dims[0] ?? 1;
  if (task === "classification") {
    // Top class along the last axis, as numpy's argmax(-1): one per row of [batch, classes],
    // one for a 1-D output, one per position of [batch, tokens, classes].
    const width = expected.dims.at(-1) ?? 1;
    const positions = width ? expected.data.length / width : 0;
    const top = (t, p) => argmax(t.data.slice(p * width, (p + 1) * width));
    let agree = 0;
    for (let p = 0; p < positions; p++) agree += top(got, p) === top(expected, p) ? 1 : 0;
    return { top1_agreement: agree / positions };
  }
  if (task === "embedding") {
    let worst = 1;
    for (let r = 0; r < rows; r++) worst = Math.min(worst, cosine(row(got, r), row(expected, r)));
    return { cosine_min: worst };
  }
  return {};
}

export function verdict(outputs, metric, tol) {
  for (const [name, o] of Object.entries(outputs)) {
    if (o.shape_mismatch) return `output ${name}: shape ${JSON.stringify(o.shape_mismatch.got)}, expected ${JSON.stringify(o.shape_mismatch.expected)}`;
    if (o.nonfinite) return `output ${name}: ${o.nonfinite} inf/NaN where the server's value is finite`;
    if (o.first_mismatch) {
      const m = o.first_mismatch;
      return `output ${name} at [${m.index.join(", ")}]: expected ${m.expected}, got ${m.got} (max abs ${o.max_abs.toExponential(2)}; allowed abs ${tol.abs}, rel ${tol.rel})`;
    }
  }
  // As onnxport's budgets: a bound left at null is not judged, and NaN fails.
  if (metric.top1_agreement !== undefined && tol.top1_min != null && !(metric.top1_agreement >= tol.top1_min)) return `top-1 agreement ${metric.top1_agreement.toFixed(4)} < ${tol.top1_min}`;
  if (metric.cosine_min !== undefined && tol.cosine_min != null && !(metric.cosine_min >= tol.cosine_min)) return `min cosine ${metric.cosine_min.toFixed(6)} < ${tol.cosine_min}`;
  return null;
}
