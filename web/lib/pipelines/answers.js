// A pipeline's answer (the manifest's `pipeline.answer`): its steps applied to each row of one output, as
// server/onnxport/pipelines/answers.py does. mean_pool averages a row of token vectors over the tokens its mask
// keeps (the input named by the step); softmax, sigmoid and normalize map a row to a row; top_k, argmax
// and ctc end the steps with [{label, index, score}] best first, {label, index, score}, or a text. Without
// such a step a row's answer is the row itself, as numbers (an embedding).
/** @import { Tensor, Tensors } from "../tensors/tensors.js" */

/**
 * @typedef {object} AnswerStep
 * @property {"mean_pool"|"softmax"|"sigmoid"|"normalize"|"top_k"|"argmax"|"ctc"} op
 * @property {string} [mask] @property {number} [k] @property {string[]} [labels] @property {string[]} [vocabulary] @property {number} [blank]
 */
/** @typedef {{output: string, steps: AnswerStep[]}} AnswerSpec */
/** @typedef {{label: string, index: number, score: number}} Scored */
/** One row's answer. @typedef {number[] | Scored[] | Scored | string} Answer */

const ENDING = new Set(["top_k", "argmax", "ctc"]);

/**
 * One answer per row of `output` (its first axis).
 * @param {AnswerSpec} spec
 * @param {Tensor} output
 * @param {Tensors} [feeds] the inputs the model ran on (mean_pool reads its mask there)
 * @returns {Answer[]}
 */
export function answers(spec, output, feeds = {}) {
  const values = Array.from(output.data, Number);
  const rows = output.dims.length < 2 ? values.length : output.dims[0];
  const width = rows ? values.length / rows : 0;
  const inner = output.dims.length > 2 ? output.dims.slice(1) : [width];
  const pool = spec.steps.find((s) => s.op === "mean_pool");
  const mask = pool ? feeds[pool.mask ?? ""] : undefined;
  if (pool && !mask) throw new Error(`mean_pool needs the input ${JSON.stringify(pool.mask)} the model ran on`);
  const maskWidth = mask ? mask.data.length / rows : 0;
  return Array.from({ length: rows }, (_, r) =>
    answer(
      spec.steps,
      values.slice(r * width, (r + 1) * width),
      inner,
      mask ? Array.from(mask.data, Number).slice(r * maskWidth, (r + 1) * maskWidth) : null,
    ),
  );
}

/** @param {AnswerStep[]} steps @param {number[]} row @param {number[]} dims the row's own shape @param {number[]|null} mask */
function answer(steps, row, dims, mask) {
  const last = dims[dims.length - 1];
  for (const [index, step] of steps.entries()) {
    if (ENDING.has(step.op) && index !== steps.length - 1)
      throw new Error(`answer step ${index} (${step.op}) must be the last`);
    if (step.op === "mean_pool") {
      const weights = /** @type {number[]} */ (mask);
      const total = Math.max(
        weights.reduce((a, b) => a + b, 0),
        1e-9,
      );
      const pooled = new Array(last).fill(0);
      weights.forEach((w, t) => {
        for (let h = 0; h < last; h += 1) pooled[h] += row[t * last + h] * w;
      });
      row = pooled.map((v) => v / total);
    } else if (step.op === "softmax") row = perLast(row, last, softmax);
    else if (step.op === "sigmoid") row = row.map((v) => 1 / (1 + Math.exp(-v)));
    else if (step.op === "normalize") row = perLast(row, last, normalize);
    else if (step.op === "top_k") {
      const order = row.map((score, i) => ({ score, i })).sort((a, b) => b.score - a.score || a.i - b.i);
      return order.slice(0, step.k ?? 5).map(({ score, i }) => ({ label: label(step, i), index: i, score }));
    } else if (step.op === "argmax") {
      const best = row.reduce((b, v, i) => (v > row[b] ? i : b), 0);
      return { label: label(step, best), index: best, score: row[best] };
    } else if (step.op === "ctc") return ctc(row, last, step.vocabulary ?? [], step.blank ?? 0);
  }
  return row.map((v) => Math.fround(v));
}

/** @param {number[]} row @param {number} width @param {(part: number[]) => number[]} f */
function perLast(row, width, f) {
  const out = [];
  for (let i = 0; i < row.length; i += width) out.push(...f(row.slice(i, i + width)));
  return out;
}

/** @param {number[]} values */
function softmax(values) {
  const top = Math.max(...values);
  const exps = values.map((v) => Math.exp(v - top));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / total);
}

/** @param {number[]} values */
function normalize(values) {
  const norm = Math.max(Math.sqrt(values.reduce((a, v) => a + v * v, 0)), 1e-12);
  return values.map((v) => v / norm);
}

/** @param {AnswerStep} step @param {number} index */
function label(step, index) {
  return step.labels && index < step.labels.length ? step.labels[index] : String(index);
}

// Greedy CTC over [time, symbols]: the best symbol of each step, repeats merged, blanks dropped.
/** @param {number[]} row @param {number} symbols @param {string[]} vocabulary @param {number} blank */
function ctc(row, symbols, vocabulary, blank) {
  let text = "";
  let previous = -1;
  for (let t = 0; t < row.length; t += symbols) {
    const step = row.slice(t, t + symbols);
    const best = step.reduce((b, v, i) => (v > step[b] ? i : b), 0);
    if (best !== previous && best !== blank && best < vocabulary.length) text += vocabulary[best];
    previous = best;
  }
  return text;
}
