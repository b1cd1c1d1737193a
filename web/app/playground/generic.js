// Any other model (imported ones): its own golden inputs (an imported test directory's, or the
// build's), one set at a time; seeded random inputs only when it has none.
import { tensor } from "../../lib/index.js";
import { ARRAYS, tensorType } from "../../lib/internal.js";
import { client } from "../client.js";
import { el } from "../ui.js";

function generator(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0; // a fixed LCG: the same inputs on every visit
    return state / 2 ** 32;
  };
}

function randomFeeds(model) {
  const random = generator(0);
  const feeds = {};
  for (const input of model.inputs) {
    const type = tensorType(input.dtype);
    const dims = (input.shape ?? []).map((d) => (typeof d === "number" && d > 0 ? d : 1));
    const size = dims.reduce((a, b) => a * b, 1);
    const data = new ARRAYS[type](size);
    for (let i = 0; i < size; i++) {
      const r = random();
      data[i] = type.endsWith("int64")
        ? BigInt(Math.floor(r * 4))
        : type.startsWith("float")
          ? r * 2 - 1
          : Math.floor(r * 4);
    }
    feeds[input.name] = tensor(type, dims, data);
  }
  return feeds;
}

const shapeText = (feeds) =>
  Object.entries(feeds)
    .map(([name, t]) => `${name} [${t.dims.join(", ")}]`)
    .join(", ");

// The golden-sets source of any model: {key, label, element, feeds(), describe, firstFeeds}.
export async function genericInput(model) {
  const sets = await client.golden(model.name).catch(() => []);
  if (!sets.length) {
    return {
      key: "golden",
      label: "seeded random inputs",
      element: el(
        "div",
        { class: "input generic" },
        el("p", {
          text: "This model has no golden inputs: seeded random inputs from its input signature (dynamic dimensions = 1).",
        }),
      ),
      feeds: () => randomFeeds(model),
      describe,
      firstFeeds: null,
    };
  }
  const origin = model.golden?.outputs_from ?? "golden data";
  const synthetic = model.golden_data === "synthetic";
  const picker = el(
    "select",
    { "aria-label": "input set", "data-testid": "golden-set" },
    sets.map((set, i) => el("option", { value: String(i), text: `set ${i}: ${shapeText(set.inputs)}` })),
  );
  const what = synthetic ? "seeded random inputs made at import" : "the model's own inputs";
  return {
    key: "golden",
    label: synthetic ? "golden sets (seeded random)" : "golden sets",
    element: el(
      "div",
      { class: "input generic" },
      el("p", {
        text: `${what[0].toUpperCase()}${what.slice(1)} (${sets.length} golden set${sets.length === 1 ? "" : "s"}, expected outputs from ${origin}).`,
      }),
      el("label", {}, "Input set ", picker),
    ),
    feeds: () => sets[Number(picker.value)].inputs,
    describe,
    firstFeeds: sets[0].inputs,
  };
}

export function describe(outputs) {
  const [name, first] = Object.entries(outputs)[0];
  return {
    label: `${name}: [${first.dims.join(", ")}]`,
    value: Number(first.data[0]),
    detail: `first value ${Number(first.data[0]).toPrecision(6)}`,
  };
}
