// Models page: an overview, one compact row per model: its name, task and playground link beside the variants it
// serves (precision, size, vs fp32) and those it made but does not serve; the skipped ones folded into one line
// ("5 skipped"), each reason a short line with the whole text on demand. The model page has the rest.
import { variants } from "../../lib/index.js";
import { bytes, el, metricText, syntheticNote, table } from "../ui.js";
import { int4Note, precisionText, reasonView, statusView } from "../variant-text.js";

export function modelsPage(manifest) {
  const rows = Object.values(manifest.models).map(modelRow);
  if (!rows.length) return [el("p", { text: "No models yet: run `onnxport build`." })];
  return [el("div", { class: "models", "data-testid": "models" }, rows)];
}

function modelRow(model) {
  const all = variants(model);
  const shown = all.filter(([, v]) => v.status !== "skipped");
  const skipped = all.filter(([, v]) => v.status === "skipped");
  return el(
    "section",
    { class: "model-row", "data-model": model.name },
    el(
      "div",
      { class: "model-head" },
      el(
        "h2",
        {},
        el("a", { href: `#/model/${model.name}`, text: model.name }),
        el("span", { class: "task", text: ` · ${model.task}` }),
      ),
      el("p", { class: "description", title: model.description, text: model.description }),
      el("a", { class: "button small", href: `#/play/${model.name}`, text: "Open in the playground" }),
    ),
    el(
      "div",
      { class: "model-variants" },
      syntheticNote(model),
      shown.length
        ? table(
            ["variant", "precision", "size", "vs fp32", "status"],
            shown.map(([name, v]) => ({
              attributes: { class: v.status === "ok" ? "" : "rejected", "data-variant": name },
              cells: [
                v.label ?? name,
                precisionText(v),
                bytes(v.bytes),
                metricText(v.vs_fp32?.metric),
                statusView(model, name, v),
              ],
            })),
            { class: "variants compact" },
          )
        : null,
      int4Note(model),
      skippedFold(model, skipped),
    ),
  );
}

// "5 skipped", folded: opened, one line per variant with its short reason (each reason's whole text on demand).
function skippedFold(model, skipped) {
  if (!skipped.length) return null;
  return el(
    "details",
    { class: "skipped-fold", "data-testid": "skipped" },
    el("summary", { "data-testid": "skipped-count", text: `${skipped.length} skipped` }),
    el(
      "table",
      { class: "variants compact skipped" },
      el(
        "tbody",
        {},
        skipped.map(([name, v]) =>
          el(
            "tr",
            { "data-variant": name, class: "skipped" },
            el("td", { text: v.label ?? name }),
            el("td", {}, reasonView("", v.reason, `${model.name} ${name}: `)),
          ),
        ),
      ),
    ),
  );
}
