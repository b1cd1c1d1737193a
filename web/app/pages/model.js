// Model page: the manifest's metadata (inputs, outputs, opset, operators, provenance) and variants.
import { variants } from "../../lib/index.js";
import { bytes, el, metricText, syntheticNote, table } from "../ui.js";
import { int4Note, precisionText, statusView } from "../variant-text.js";

const shape = (s) => `[${(s ?? []).join(", ")}]`;

export function modelPage(model) {
  const facts = Object.entries(model.facts ?? {}).filter(([, v]) => typeof v !== "object");
  // The packages the build recorded as used for this model (convert/intake/tools.py), in the order it names them.
  const tools = Object.entries(model.provenance?.tools ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  return [
    el("h2", { text: `${model.name}: ${model.description}` }),
    syntheticNote(model),
    el("p", {}, el("a", { class: "button", href: `#/play/${model.name}`, text: "Open in the playground" })),
    el("h3", { text: "Graph" }),
    table(
      ["", ""],
      [
        { cells: ["source", `${model.kind}, task ${model.task}`] },
        { cells: ["opset", `${model.opset} (IR ${model.ir_version})`] },
        { cells: ["producer", `${model.producer.name} ${model.producer.version}`] },
        ...facts.map(([k, v]) => ({ cells: [k, String(v)] })),
        { cells: ["tools", tools || "-"] },
        ...(model.provenance?.calibration
          ? [
              {
                cells: [
                  "calibration",
                  `${model.provenance.calibration}` +
                    (model.provenance.calibration_data ? ` (${model.provenance.calibration_data} data)` : ""),
                ],
              },
            ]
          : []),
      ],
      { class: "facts" },
    ),
    el("h3", { text: "Inputs and outputs" }),
    table(
      ["", "name", "dtype", "shape"],
      [
        ...model.inputs.map((i) => ({ cells: ["input", i.name, i.dtype, shape(i.shape)] })),
        ...model.outputs.map((o) => ({ cells: ["output", o.name, o.dtype, shape(o.shape)] })),
      ],
    ),
    el("h3", { text: "Operators" }),
    el(
      "p",
      { class: "operators" },
      Object.entries(model.operators).map(([op, n]) => el("span", { class: "op", text: `${op} ×${n}` })),
    ),
    el("h3", { text: "Variants" }),
    table(
      ["variant", "precision", "size", "× fp32", "max abs vs fp32", "metric vs fp32", "native ms", "status"],
      variants(model).map(([name, v]) => ({
        attributes: { class: v.status === "ok" ? "" : v.status, "data-variant": name },
        cells: [
          v.label ?? name,
          precisionCell(v),
          bytes(v.bytes),
          v.size_ratio?.toFixed(3) ?? "-",
          maxAbs(v.vs_fp32),
          metricText(v.vs_fp32?.metric),
          v.speed?.native_ms?.toFixed(3) ?? "-",
          statusView(model, name, v),
        ],
      })),
      { class: "variants" },
    ),
    int4Note(model),
  ];
}

// The precision, with how the weights are stored (manifest settings.weights) on hover.
function precisionCell(v) {
  return el("span", { title: v.settings?.weights ?? null, text: precisionText(v) });
}

function maxAbs(measurement) {
  const values = Object.values(measurement?.outputs ?? {}).map((o) => o.max_abs ?? 0);
  return values.length ? Math.max(...values).toExponential(2) : "-";
}
