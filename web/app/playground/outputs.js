// A run's outputs as a table: name, shape, dtype, the first values, and a reading by the
// model's task (manifest `task`, `metric_output`): top-k classes for classification, the argmax
// at each step for sequences.
import { table } from "../ui.js";

const FIRST = 6; // values shown per output
const TOP_K = 3;
const STEPS = 40; // sequence steps shown

const number = (v) =>
  typeof v === "bigint" ? v.toString() : Number.isInteger(v) ? String(v) : Number(v).toPrecision(5);

export function firstValues(t, n = FIRST) {
  const shown = Array.from(t.data.subarray(0, n), (v) => (t.type === "bool" ? String(Boolean(v)) : number(v)));
  return shown.join(", ") + (t.data.length > n ? `, … (${t.data.length} values)` : "");
}

// Indices of the k largest values, largest first.
function topK(values, k) {
  return Array.from(values.keys())
    .sort((a, b) => values[b] - values[a] || a - b)
    .slice(0, k);
}

function argmaxes(data, width, count) {
  const out = [];
  for (let p = 0; p < count; p++) {
    let best = 0;
    for (let c = 1; c < width; c++) if (data[p * width + c] > data[p * width + best]) best = c;
    out.push(best);
  }
  return out;
}

// The task's reading of one output, or "" when the task says nothing about it: only the metric
// output (any float output when the model names none) of a classification or sequence model.
export function reading(model, name, t) {
  if (!t.type.startsWith("float") || !t.dims.length || !t.data.length) return "";
  if (model.metric_output ? name !== model.metric_output : false) return "";
  const width = t.dims.at(-1);
  if (model.task === "classification" && width > 1) {
    const first = t.data.subarray(0, width);
    const rows = t.data.length / width;
    const best = topK(first, Math.min(TOP_K, width)).map((c) => `class ${c} (${number(first[c])})`);
    return `top ${best.length}${rows > 1 ? " of row 0" : ""}: ${best.join(", ")}`;
  }
  if (model.task === "sequence" && t.dims.length >= 2 && width > 1) {
    const positions = t.data.length / width;
    const shown = argmaxes(t.data, width, Math.min(positions, STEPS));
    return `argmax over ${width} classes at each of ${positions} steps: ${shown.join(" ")}${positions > STEPS ? " …" : ""}`;
  }
  return "";
}

export function outputsTable(model, outputs, testid) {
  const names = [
    ...model.outputs.map((o) => o.name).filter((n) => n in outputs),
    ...Object.keys(outputs).filter((n) => !model.outputs.some((o) => o.name === n)),
  ];
  return table(
    ["output", "shape", "dtype", "first values", "reading"],
    names.map((name) => {
      const t = outputs[name];
      return {
        attributes: { "data-output": name },
        cells: [name, `[${t.dims.join(", ")}]`, t.type, firstValues(t), reading(model, name, t) || "-"],
      };
    }),
    { class: "outputs", "data-testid": testid },
  );
}
