// Why a result failed, in the browser's words. A reason is data, a code and its numbers and names
// ({code: "top1_below_bound", value: 0.75, bound: 0.97, against: "fp32", limit: "budget"}); the codes are
// defined once, in server/onnxport/accuracy/reasons.py, whose render() gives Python's words. Both lists of
// codes are held to tests/vectors/reason_vectors.json. Numbers JSON cannot hold come as "Infinity",
// "-Infinity" and "NaN".

/** Every code a reason can have (accuracy/reasons.py CODES). */
export const REASON_CODES = Object.freeze([
  "top1_below_bound",
  "cosine_below_bound",
  "step_agreement_below_bound",
  "mean_error_above_bound",
  "max_error_above_bound",
  "output_missing",
  "shape_mismatch",
  "nonfinite",
  "integer_mismatch",
  "outside_floor",
  "elementwise_diagnostic",
]);

/**
 * A reason: its `code` and the fields that code has (accuracy/reasons.py).
 * @typedef {{code: string} & Record<string, any>} Reason
 */

const AGAINST = { fp32: "fp32", server_run: "the server" }; // server_run: the server's run of the same file

/** A number as a reason holds it: the number, or "Infinity", "-Infinity", "NaN" for what JSON cannot hold. */
export function reasonNumber(x) {
  const n = Number(x);
  return Number.isFinite(n) ? n : String(n);
}

const fixed = (x, digits) => (typeof x === "number" ? x.toFixed(digits) : String(x));
const significant = (x) => (typeof x === "number" ? String(Number(x.toPrecision(3))) : String(x));
const list = (values) => `[${values.join(", ")}]`;
const name = (text) => `'${text}'`; // quoted as the check's report quotes them (tests read both)

function limitText(reason) {
  if (reason.limit === "serving_bound")
    return `the serving bound (${Math.round((reason.share ?? 1) * 100)}% of the budget)`;
  return reason.limit;
}

/**
 * The browser's words for a reason (a judgement's `reason`, or its `diagnostic`).
 * @param {Reason} reason
 * @returns {string}
 */
export function renderReason(reason) {
  const against = AGAINST[reason.against] ?? reason.against;
  const bound = () => `${limitText(reason)} ${reason.bound}`;
  switch (reason.code) {
    case "top1_below_bound":
      return `top-1 agreement with ${against} ${fixed(reason.value, 4)} < ${bound()}`;
    case "cosine_below_bound":
      return `min cosine similarity to ${against} ${fixed(reason.value, 5)} < ${bound()}`;
    case "step_agreement_below_bound":
      return `per-step top-1 agreement with ${against} ${fixed(reason.value, 4)} < ${bound()}`;
    case "mean_error_above_bound":
      return `mean error / max |${against}| ${significant(reason.value)} > ${bound()}`;
    case "max_error_above_bound":
      return `max error / max |${against}| ${significant(reason.value)} > ${bound()}`;
    case "output_missing":
      return `output ${name(reason.output)} is missing`;
    case "shape_mismatch":
      return (
        `output ${name(reason.output)} has shape ${list(reason.shape)}, ` +
        `${against} has ${list(reason.expected_shape)}`
      );
    case "nonfinite":
      return `output ${name(reason.output)} has ${reason.count} inf/NaN values where ${against} is finite`;
    case "integer_mismatch":
      return `integer output ${name(reason.output)} differs from ${against} in ${reason.count} elements`;
    case "outside_floor":
      return (
        `output ${name(reason.output)} at ${list(reason.index)}: expected ${reason.expected}, got ${reason.got} ` +
        `(max abs ${significant(reason.max_abs)}; ` +
        `floor abs ${reason.floor_abs ?? "none"}, rel ${reason.floor_rel ?? "none"})`
      );
    case "elementwise_diagnostic":
      return diagnosticText(reason);
    default:
      throw new Error(`unknown reason code ${JSON.stringify(reason.code)}: expected one of ${REASON_CODES.join(", ")}`);
  }
}

function diagnosticText(d) {
  let text = `element-wise vs the server's output of this file: max abs ${significant(d.max_abs)}`;
  if (d.output !== null) text += ` in ${name(d.output)}`;
  const first = d.first_outside_floor;
  if (first) text += `, first outside the floor at ${first.output}${list(first.index)}`;
  // An abs bound of 0 says nothing: equal outputs are said to be equal.
  return (
    text +
    (d.max_abs > 0
      ? `; the element rule would have needed abs ${significant(d.needed_abs)}`
      : ": the outputs match exactly")
  );
}
