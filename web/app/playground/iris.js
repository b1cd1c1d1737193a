// iris: the four measurements of a flower, in centimetres.
import { el } from "../ui.js";
import { tensor } from "../../lib/index.js";
import { argmax } from "../../lib/internal.js";

const FIELDS = [["sepal length", 5.1], ["sepal width", 3.5], ["petal length", 1.4], ["petal width", 0.2]];
const SPECIES = ["setosa", "versicolor", "virginica"];

export function irisInput() {
  const inputs = FIELDS.map(([label, value]) => el("input", { type: "number", step: "0.1", min: "0", value, "aria-label": label }));
  return {
    element: el("div", { class: "input iris" },
      FIELDS.map(([label], i) => el("label", {}, `${label} (cm) `, inputs[i]))),
    feeds() {
      const data = Float32Array.from(inputs.map((input) => Number(input.value)));
      if (data.some((v) => !Number.isFinite(v))) throw new Error("every measurement must be a number");
      return { features: tensor("float32", [1, 4], data) };
    },
    describe(outputs) {
      const probabilities = outputs.probabilities.data;
      const index = argmax(probabilities);
      return { label: SPECIES[index] ?? `class ${index}`, value: index, detail: `p = ${probabilities[index].toFixed(3)}` };
    },
  };
}
