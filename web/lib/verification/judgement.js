// The one judgement of a runtime's result for a variant, as the import judges it
// (server/onnxport/accuracy/judgement.py is the same rule; tests/vectors/judgement_vectors.json pins
// both, reasons included: a reason is data, a code and its numbers, which reasons.js renders).
// `onnxport check`, first-use verification and the playground use it.
//
// A file that computes in fp32 is judged element by element against the server's output of the same
// file, within the runtime's floor (onnxruntime-web's own: the table's "fp32/<runtime>"), and by its
// task metric within that floor. A file that computes in fp16 or int8 is judged by its task metric
// against fp32's output on the same inputs, within its budget: two int8 (or fp16) implementations
// round differently, so the element-wise difference to the server's run of the same file is a
// diagnostic, never the verdict. A missing output, a shape that differs and inf/NaN where the
// reference is finite always fail.
import { budgetCheck, compareOutput, mergeMetrics, metricOutputs, taskMetric } from "./compare.js";
import { reasonNumber } from "./reasons.js";

export const ARITHMETICS = Object.freeze(["fp32", "fp16", "int8"]);

/**
 * A row of the tolerance table (the server's /api/tolerances, "variant/key") or a variant's budget.
 * @typedef {object} Tolerance
 * @property {number|null} [abs]
 * @property {number|null} [rel]
 * @property {number} [top1_min]
 * @property {number} [cosine_min]
 * @property {number} [scaled_max_abs]
 * @property {number} [scaled_mean_abs]
 * @property {boolean} [overridden] set by `onnxport check --tolerances`: kept as given
 */
/**
 * A judgement: `basis` "floor" (an fp32 file, element by element) or "budget" (fp16, int8: the task metric).
 * `reason` is data (reasons.js renderReason gives its words), as is `diagnostic` (code "elementwise_diagnostic").
 * @typedef {{ok: boolean, reason: import("./reasons.js").Reason|null, basis: "floor"|"budget", metric: object, outputs: object|null, diagnostic: object|null}} Judgement
 */
/** @import { ModelEntry } from "../files/manifest.js" */

/**
 * The floor an fp32 file is judged by in one runtime: the tolerance table's "fp32/<runtime>" entry
 * (onnxruntime-web's own floors, made for single operators), loosened to the model's own export
 * tolerance where that is looser (the manifest's `validation.tolerance`: what the build accepted
 * between fp32 onnxruntime and the source). A deep network's fp32 kernels in two builds differ by
 * more than one operator's (a detector's sigmoid output 1.02e-4 apart, a box coordinate of 120.7
 * 2.4e-4 apart), and the import already called such a difference the same model.
 * A floor the user set (`onnxport check --tolerances`: marked `overridden`) is kept as given.
 * Python's twin: onnxport.accuracy.judgement.fp32_floor.
 *
 * @param {Tolerance|null|undefined} tableFloor the table's "fp32/<runtime>" entry
 * @param {ModelEntry} model the manifest's model entry
 * @returns {Tolerance|null} the floor, or null without a table entry
 */
export function fp32Floor(tableFloor, model) {
  if (!tableFloor) return null;
  if (tableFloor.overridden) return tableFloor; // the user's own bound (onnxport check --tolerances), as given
  const own = model?.validation?.tolerance;
  if (!own) return tableFloor;
  const looser = (a, b) => (a == null ? (b ?? null) : b == null ? a : Math.max(a, b));
  return { ...tableFloor, abs: looser(tableFloor.abs, own.abs), rel: looser(tableFloor.rel, own.rel) };
}

/** What a variant's file computes: its record's `arithmetic` (before that field: its precision). */
export function arithmeticOf(variantRecord) {
  return variantRecord.arithmetic ?? variantRecord.precision;
}

/**
 * What a file of `variant` is judged by on a runtime key (runtimes.js): the arithmetic its file
 * computes and that arithmetic's budget, as the variant record says (a repository built before those
 * fields: its precision, and the table's row), the runtime's fp32 floor, and the table's element-wise
 * row for the variant. `onnxport check`, first-use verification and the playground all judge by it.
 *
 * @param {ModelEntry} model the manifest's model entry
 * @param {string} variant the variant's name (a form answers to its variant's rule)
 * @param {string} key the runtime key (runtimes.js)
 * @param {Record<string, Tolerance>} tolerances the server's /api/tolerances ({"variant/key": {...}})
 * @returns {{arithmetic: string, budget: Tolerance|null, floor: Tolerance|null, tolerance: Tolerance|null}}
 */
export function judgementRule(model, variant, key, tolerances) {
  const built = model.variants[variant];
  const tolerance = tolerances[`${variant}/${key}`] ?? null;
  return {
    arithmetic: arithmeticOf(built),
    budget: built.budget ?? tolerance,
    floor: fp32Floor(tolerances[`fp32/${key}`], model),
    tolerance,
  };
}

/** judge() of one run of `model` by a judgementRule: got, fp32 and sameVariant as judge() takes them. */
export function judgeRun(model, rule, { got, fp32 = null, sameVariant = null }) {
  return judge({
    task: model.task,
    metricOutput: model.metric_output ?? null,
    arithmetic: rule.arithmetic,
    budget: rule.budget,
    floor: rule.floor,
    got,
    fp32,
    sameVariant,
  });
}

const SERVER = "server_run"; // the floor's reference, in reasons

/**
 * Judge one result.
 *
 * @param {object} args
 * @param {string} args.task the model's task (classification, embedding, sequence, detection-map, ...)
 * @param {string|null} [args.metricOutput] the output the task metric reads (the manifest's metric_output)
 * @param {"fp32"|"fp16"|"int8"} args.arithmetic what the file computes (the variant record's `arithmetic`)
 * @param {object|null} [args.budget] the variant record's `budget` ({top1_min, cosine_min, scaled_max_abs, scaled_mean_abs}); needed unless fp32
 * @param {object|null} [args.floor] the tolerance table's "fp32/<runtime>" entry ({abs, rel, top1_min, cosine_min})
 * @param {Object<string, {type: string, dims: number[], data: ArrayLike<number|bigint>}>} args.got the runtime's outputs
 * @param {Object<string, object>|null} [args.fp32] the server's fp32 variant's outputs on the same inputs; needed unless fp32
 * @param {Object<string, object>|null} [args.sameVariant] the server's outputs of the same file; needed for fp32
 * @returns {Judgement}
 *   `outputs`: element-wise errors against sameVariant (the floor as the element rule), whatever the basis;
 *   `diagnostic` (budget basis): {code: "elementwise_diagnostic", max_abs, output, first_outside_floor, needed_abs}.
 */
export function judge({
  task,
  metricOutput = null,
  arithmetic,
  budget = null,
  floor = null,
  got,
  fp32 = null,
  sameVariant = null,
}) {
  if (!ARITHMETICS.includes(arithmetic))
    throw new Error(`arithmetic must be one of ${ARITHMETICS.join(", ")}, got ${JSON.stringify(arithmetic)}`);
  const floorTol = floor ?? {};
  if (arithmetic === "fp32") {
    if (!sameVariant)
      throw new Error("an fp32 file is judged against the server's output of the same file: sameVariant is needed");
    return byFloor(task, metricOutput, floorTol, got, sameVariant);
  }
  if (!fp32)
    throw new Error(`an ${arithmetic} file is judged against fp32's outputs on the same inputs: fp32 is needed`);
  if (!budget) throw new Error(`an ${arithmetic} file is judged within its budget: budget is needed`);
  return byBudget(task, metricOutput, arithmetic, budget, floorTol, got, fp32, sameVariant);
}

/** @returns {Judgement} */
function byFloor(task, metricOutput, floor, got, same) {
  const vs = against(same, got, task, metricOutput, floor);
  const metric = vs.metric ?? {};
  const reason =
    missing(same, got) ??
    broken(vs.outputs, { exactIntegers: true, reference: SERVER }) ??
    outsideFloor(vs.outputs, floor) ??
    budgetCheck(floor, task, metric, { against: SERVER, limit: "floor" });
  return { ok: reason === null, reason, basis: "floor", metric, outputs: vs.outputs, diagnostic: null };
}

/** @returns {Judgement} */
function byBudget(task, metricOutput, arithmetic, budget, floor, got, fp32, same) {
  const vsFp32 = against(fp32, got, task, metricOutput, null);
  let reason = missing(fp32, got) ?? verdict(arithmetic, budget, task, vsFp32);
  let outputs = null,
    diagnostic = null;
  if (same) {
    outputs = against(same, got, task, null, elementwise(floor) ? floor : null).outputs;
    diagnostic = elementwiseDiagnostic(outputs);
    // A shape the server's own run of this file does not have is wrong whatever fp32 says.
    reason = reason ?? missing(same, got) ?? broken(outputs, { exactIntegers: false, reference: SERVER });
  }
  return { ok: reason === null, reason, basis: "budget", metric: judgedMetric(vsFp32), outputs, diagnostic };
}

function elementwise(tol) {
  return tol != null && (tol.abs != null || tol.rel != null);
}

// Python measure.against on one golden set: errors per output present in both, and the task metric
// (only when there is a metric output).
function against(reference, got, task, metricOutput, tol) {
  const outputs = {};
  for (const [name, expected] of Object.entries(reference)) {
    if (got[name]) outputs[name] = compareOutput(got[name], expected, tol);
  }
  if (!metricOutput) return { outputs };
  const metrics = metricOutputs(task, metricOutput, reference)
    .filter((name) => got[name])
    .map((name) => taskMetric(task, got[name], reference[name]));
  return { outputs, metric: mergeMetrics(metrics) };
}

// Python measure.verdict: what fails whatever the budget, then the budget.
function verdict(arithmetic, budget, task, vs) {
  return (
    broken(vs.outputs, { exactIntegers: arithmetic === "fp32", reference: "fp32" }) ??
    budgetCheck(budget, task, judgedMetric(vs))
  );
}

// Python measure.broken.
function broken(outputs, { exactIntegers, reference }) {
  for (const [output, e] of Object.entries(outputs)) {
    if (e.shape_mismatch)
      return {
        code: "shape_mismatch",
        output,
        shape: [...e.shape_mismatch.got],
        expected_shape: [...e.shape_mismatch.expected],
        against: reference,
      };
    if (e.nonfinite) return { code: "nonfinite", output, count: e.nonfinite, against: reference };
    if (exactIntegers && e.mismatches)
      return { code: "integer_mismatch", output, count: e.mismatches, against: reference };
  }
  return null;
}

// Python measure.judged_metric: the task metric, or without one every output's scaled error.
function judgedMetric(vs) {
  if (vs.metric && Object.keys(vs.metric).length) return vs.metric;
  let worst = 0;
  for (const e of Object.values(vs.outputs)) worst = Math.max(worst, (e.max_abs ?? 0) / Math.max(e.scale ?? 1, 1e-12));
  return { scaled_max_abs: worst };
}

function missing(reference, got) {
  const output = Object.keys(reference).find((n) => !got[n]);
  return output === undefined ? null : { code: "output_missing", output };
}

function outsideFloor(outputs, floor) {
  for (const [output, e] of Object.entries(outputs)) {
    const first = e.first_mismatch;
    if (first) {
      return {
        code: "outside_floor",
        output,
        index: [...first.index],
        expected: reasonNumber(first.expected),
        got: reasonNumber(first.got),
        max_abs: e.max_abs,
        floor_abs: floor.abs ?? null,
        floor_rel: floor.rel ?? null,
      };
    }
  }
  return null;
}

/**
 * How far a result is from the server's output of the same file, element by element: the largest
 * difference, the first element outside the floor, and the abs bound the element rule would have
 * needed (the largest difference itself). A diagnostic, never a verdict; reasons.js renders its words.
 */
export function elementwiseDiagnostic(outputs) {
  const sized = Object.entries(outputs).filter(([, e]) => !e.shape_mismatch);
  let worstName = null,
    worst = 0;
  for (const [name, e] of sized) {
    if (worstName === null || e.max_abs > worst) [worstName, worst] = [name, e.max_abs];
  }
  const first = sized.find(([, e]) => e.first_mismatch);
  return {
    code: "elementwise_diagnostic",
    max_abs: worst,
    output: worstName,
    first_outside_floor: first
      ? {
          output: first[0],
          index: [...first[1].first_mismatch.index],
          expected: reasonNumber(first[1].first_mismatch.expected),
          got: reasonNumber(first[1].first_mismatch.got),
        }
      : null,
    needed_abs: worst,
  };
}
