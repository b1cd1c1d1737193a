// Models page: one card per model with its variants' size, precision, error and status.
import { variants } from "../../lib/index.js";
import { bytes, el, metricText, statusText, syntheticNote, table } from "../ui.js";

export function modelsPage(manifest) {
  const cards = Object.values(manifest.models).map((model) => el("section", { class: "card", "data-model": model.name },
    el("h2", {}, el("a", { href: `#/model/${model.name}`, text: model.name }), ` · ${model.task}`),
    el("p", { text: model.description }),
    syntheticNote(model),
    table(["variant", "precision", "size", "vs fp32", "status"], variants(model).map(([name, v]) => ({
      attributes: { class: v.status === "ok" ? "" : "rejected", "data-variant": name },
      cells: [v.label ?? name, v.arithmetic ?? v.precision, bytes(v.bytes), metricText(v.vs_fp32?.metric), statusText(v)],
    }))),
    el("p", {}, el("a", { class: "button", href: `#/play/${model.name}`, text: "Open in the playground" }))));
  if (!cards.length) return [el("p", { text: "No models yet: run `onnxport build`." })];
  return cards;
}
