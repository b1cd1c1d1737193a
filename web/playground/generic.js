// Any other model (imported ones): seeded random inputs from the input signature.
import { tensorType } from "../manifest.js";
import { el } from "../ui.js";
import { ARRAYS, tensor } from "../tensors.js";


function generator(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0; // a fixed LCG: the same inputs on every visit
    return state / 2 ** 32;
  };
}

export function genericInput(model) {
  const note = el("p", { text: "Seeded random inputs from the model's input signature (dynamic dimensions = 1)." });
  return {
    element: el("div", { class: "input generic" }, note),
    feeds() {
      const random = generator(0);
      const feeds = {};
      for (const input of model.inputs) {
        const type = tensorType(input.dtype);
        const dims = (input.shape ?? []).map((d) => (typeof d === "number" && d > 0 ? d : 1));
        const size = dims.reduce((a, b) => a * b, 1);
        const data = new ARRAYS[type](size);
        for (let i = 0; i < size; i++) {
          const r = random();
          data[i] = type.endsWith("int64") ? BigInt(Math.floor(r * 4)) : type.startsWith("float") ? r * 2 - 1 : Math.floor(r * 4);
        }
        feeds[input.name] = tensor(type, dims, data);
      }
      return feeds;
    },
    describe(outputs) {
      const [name, first] = Object.entries(outputs)[0];
      return { label: `${name}: [${first.dims.join(", ")}]`, value: Number(first.data[0]), detail: `first value ${Number(first.data[0]).toPrecision(6)}` };
    },
  };
}
