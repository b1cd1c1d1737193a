// Where a playground run's inputs come from, for any model: the recipe's own widget (iris,
// digits, minilm), the model's golden sets, pasted JSON or an uploaded .npy/.npz (user-data.js
// documents both forms). One select picks the source; each keeps what was typed in it.
import { el, float32Text } from "../ui.js";
import { feedsFromFile, feedsFromJson, UserDataError } from "./user-data.js";

const PREFILL_MAX = 512; // values: larger golden sets are not pasted into the text box

function jsonOf(feeds) {
  const body = {};
  for (const [name, t] of Object.entries(feeds)) {
    // float32 at its shortest (13.4): parsed back into a Float32Array it is the same value.
    const value = (v) =>
      typeof v === "bigint"
        ? Number(v)
        : t.type === "bool"
          ? Boolean(v)
          : t.type === "float32"
            ? Number(float32Text(v))
            : v;
    body[name] = { dims: t.dims, data: Array.from(t.data, value) };
  }
  return JSON.stringify(body);
}

function example(model) {
  const body = {};
  for (const input of model.inputs) {
    const dims = (input.shape ?? [1]).map((d) => (typeof d === "number" && d > 0 ? d : 1));
    const count = dims.reduce((a, b) => a * b, 1);
    body[input.name] = {
      dims,
      data: count <= PREFILL_MAX ? new Array(count).fill(input.dtype === "bool" ? false : 0) : [],
    };
  }
  return JSON.stringify(body);
}

function jsonSource(model, golden) {
  const text = el("textarea", {
    rows: 6,
    cols: 80,
    "aria-label": "inputs as JSON",
    "data-testid": "json-input",
    spellcheck: "false",
  });
  const first = golden?.firstFeeds;
  const size = first ? Object.values(first).reduce((n, t) => n + t.data.length, 0) : Infinity;
  text.value = size <= PREFILL_MAX ? jsonOf(first) : example(model);
  const names = model.inputs.map((i) => `${i.name} (${i.dtype} [${(i.shape ?? []).join(", ")}])`).join(", ");
  return {
    label: "paste JSON",
    element: el(
      "div",
      { class: "json" },
      el("p", {
        class: "hint",
        text: `One key per input: ${names}. Each value is a nested array, or {"dims": [...], "data": [...]} with the data flat in row-major order; bool inputs take true/false, int64 may be strings of digits.`,
      }),
      text,
    ),
    feeds: () => feedsFromJson(text.value, model),
  };
}

function fileSource(model) {
  const input = el("input", {
    type: "file",
    accept: ".npy,.npz",
    "aria-label": "inputs file",
    "data-testid": "file-input",
  });
  const names = model.inputs.map((i) => i.name).join(", ");
  return {
    label: "upload .npy / .npz",
    element: el(
      "div",
      { class: "file" },
      el("p", {
        class: "hint",
        text:
          model.inputs.length === 1
            ? `An .npy of ${model.inputs[0].dtype} (np.save), or an .npz with the key ${names} (np.savez).`
            : `An .npz with one key per input: ${names} (np.savez(file, ${model.inputs.map((i) => `${i.name}=...`).join(", ")})).`,
      }),
      input,
    ),
    async feeds() {
      const file = input.files?.[0];
      if (!file) throw new UserDataError("choose an .npy or .npz file first");
      return feedsFromFile(file.name, await file.arrayBuffer(), model);
    },
  };
}

// widgets: [{key, label, element, feeds(), describe(outputs)}] made by the page (the recipe's
// widget and/or the golden sets); describe falls back to `describe` for the user's own data.
export function inputSources(model, widgets, describe, golden) {
  const sources = [...widgets, { key: "json", ...jsonSource(model, golden) }, { key: "file", ...fileSource(model) }];
  const select = el(
    "select",
    { "aria-label": "input source", "data-testid": "input-source" },
    sources.map((s) => el("option", { value: s.key, text: s.label })),
  );
  const panels = sources.map((s) =>
    el("div", { class: "source", "data-source": s.key, hidden: s !== sources[0] }, s.element),
  );
  const current = () => sources.find((s) => s.key === select.value);
  select.addEventListener("change", () =>
    panels.forEach((p) => {
      p.hidden = p.dataset.source !== select.value;
    }),
  );
  return {
    element: el("div", { class: "input" }, el("label", {}, "Inputs from ", select), ...panels),
    feeds: () => current().feeds(),
    describe: (outputs) => (current().describe ?? describe)(outputs),
  };
}
