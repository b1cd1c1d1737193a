// Compare a browser runtime's outputs with the server's, by the tolerance table the
// server publishes (/api/tolerances, from server/check/tolerances.py).
import { argmax, cosine, row } from "./tensors.js";

function passes(a, b, tol) {
  if (Number.isNaN(a) && Number.isNaN(b)) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a === b; // inf only equals the same inf
  if (Math.abs(a - b) <= tol.abs) return true;
  // onnxruntime-web's test-runner rule: both ratios below rel (same sign).
  return a / b < tol.rel && b / a < tol.rel && a / b > 0;
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
  for (let i = 0; i < expected.data.length; i++) {
    const e = Number(expected.data[i]);
    const g = Number(got.data[i]);
    if (Number.isFinite(e) && !Number.isFinite(g)) report.nonfinite += 1;
    const diff = Number.isNaN(e) && Number.isNaN(g) ? 0 : Math.abs(e - g);
    if (Number.isFinite(diff)) {
      report.max_abs = Math.max(report.max_abs, diff);
      report.max_rel = Math.max(report.max_rel, diff / Math.max(Math.abs(e), 1e-12));
    }
    const ok = exact ? e === g : passes(g, e, tol);
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
    let agree = 0;
    for (let r = 0; r < rows; r++) agree += argmax(row(got, r)) === argmax(row(expected, r)) ? 1 : 0;
    return { top1_agreement: agree / rows };
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
      return `output ${name} at [${m.index.join(", ")}]: expected ${m.expected}, got ${m.got} (max abs ${o.max_abs.toExponential(2)} > ${tol.abs})`;
    }
  }
  if (metric.top1_agreement !== undefined && metric.top1_agreement < tol.top1_min) return `top-1 agreement ${metric.top1_agreement.toFixed(4)} < ${tol.top1_min}`;
  if (metric.cosine_min !== undefined && metric.cosine_min < tol.cosine_min) return `min cosine ${metric.cosine_min.toFixed(6)} < ${tol.cosine_min}`;
  return null;
}
