// tabular: one number field per column of a model whose one input is a row of numbers ([batch, N] floats).
// The fields come from the model's own input: named "features[0]", "features[1]"... and filled with its first
// golden row. Only a dataset the recipe says the model learned (its facts' `dataset`) names the columns and
// classes: a model of one's own (the `onnxport init` template) never shows another model's names.
import { tensor } from "../../lib/index.js";
import { argmax, tensorType } from "../../lib/internal.js";
import { el, float32Text } from "../ui.js";
import { UserDataError } from "./user-data.js";

// Columns (in the dataset's order) and classes of the datasets a recipe may name: models/iris.py's.
const DATASETS = new Map([
  [
    "sklearn.datasets.load_iris",
    {
      columns: ["sepal length", "sepal width", "petal length", "petal width"],
      unit: "cm",
      classes: ["setosa", "versicolor", "virginica"],
    },
  ],
]);
const MAX_FIELDS = 32; // wider rows are given as JSON or a file

// The model's one input and its row width, or null when it is not one row of numbers.
export function tabularShape(model) {
  if (model.inputs.length !== 1) return null;
  const [input] = model.inputs;
  const type = tensorType(input.dtype);
  const width = input.shape?.length === 2 ? input.shape[1] : null;
  if (!["float32", "float64"].includes(type) || typeof width !== "number" || width < 1 || width > MAX_FIELDS)
    return null;
  return { input, type, width };
}

// What names the columns and the classes: the dataset the model learned, if this page knows it and it fits.
export function tabularNames(model, width) {
  const known = DATASETS.get(model.facts?.dataset);
  if (known && known.columns.length === width) return known;
  const name = model.inputs[0].name;
  return {
    columns: Array.from({ length: width }, (_, i) => `${name}[${i}]`),
    unit: null,
    classes: answerLabels(model),
  };
}

// Class labels the model's own pipeline declares (its answer's top_k or argmax step), if any.
function answerLabels(model) {
  return model.pipeline?.answer?.steps?.find((s) => s.labels)?.labels ?? null;
}

// The output read as the answer: the metric output, else the first float output.
function answerOutput(model, outputs) {
  if (model.metric_output && outputs[model.metric_output]) return model.metric_output;
  return Object.keys(outputs).find((name) => outputs[name].type.startsWith("float")) ?? Object.keys(outputs)[0];
}

// The widget, or null when the model's input is not a row of numbers (its golden sets and JSON remain).
export function tabularInput(model, { golden } = {}) {
  const shape = tabularShape(model);
  if (!shape) return null;
  const { input, type, width } = shape;
  const names = tabularNames(model, width);
  const first = golden?.firstFeeds?.[input.name]?.data;
  // float32 values at their shortest (13.4, not 13.399999618530273): the field reads back as the same float32.
  const shown = (v) => (type === "float32" ? float32Text(v) : String(Number(v)));
  const fields = names.columns.map((column, i) =>
    el("input", {
      type: "number",
      step: "any",
      value: first && i < first.length ? shown(first[i]) : "0",
      "aria-label": column,
    }),
  );
  return {
    element: el(
      "div",
      { class: "input tabular" },
      names.columns.map((column, i) =>
        el("label", {}, names.unit ? `${column} (${names.unit}) ` : `${column} `, fields[i]),
      ),
    ),
    feeds() {
      const data = fields.map((field, i) => {
        const value = field.value.trim() === "" ? NaN : Number(field.value);
        if (!Number.isFinite(value))
          throw new UserDataError(`${names.columns[i]}: expected a number, got ${JSON.stringify(field.value)}`);
        return value;
      });
      return {
        [input.name]: tensor(type, [1, width], type === "float64" ? Float64Array.from(data) : Float32Array.from(data)),
      };
    },
    describe(outputs) {
      const name = answerOutput(model, outputs);
      const values = outputs[name].data;
      const index = argmax(values.subarray(0, outputs[name].dims.at(-1) ?? values.length));
      const label = names.classes?.[index] ?? `class ${index}`;
      return { label, value: index, detail: `${name}[${index}] = ${Number(values[index]).toPrecision(4)}` };
    },
  };
}
