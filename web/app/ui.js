// Small DOM helpers: build elements, show progress and errors on the page.

// The children to put in the document: nested lists flattened, nothing for null, undefined or false (a helper
// that has nothing to show returns null; the DOM's own append would print it as the text "null").
export function nodes(...children) {
  return children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false);
}

// container's children replaced by these (see nodes()).
export function show(container, ...children) {
  container.replaceChildren(...nodes(children));
  return container;
}

export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  node.append(...nodes(children));
  return node;
}

export function table(headers, rows, attributes = {}) {
  return el(
    "table",
    attributes,
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        headers.map((h) => el("th", { text: h })),
      ),
    ),
    el(
      "tbody",
      {},
      rows.map((row) =>
        el(
          "tr",
          row.attributes ?? {},
          row.cells.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", { text: c }))),
        ),
      ),
    ),
  );
}

export function bytes(count) {
  if (count === undefined || count === null) return "-";
  if (count < 1024) return `${count} B`;
  if (count < 1024 ** 2) return `${(count / 1024).toFixed(1)} KB`;
  return `${(count / 1024 ** 2).toFixed(1)} MB`;
}

// A float32 value as the fewest digits that read back as the same float32: 13.4, not 13.399999618530273 (what
// the float64 it widens to prints). Fed back through a Float32Array, the text gives the very same value.
export function float32Text(value) {
  const x = Number(value);
  if (!Number.isFinite(x)) return String(x);
  const target = Math.fround(x);
  for (let digits = 1; digits < 9; digits++) {
    const shorter = Number(x.toPrecision(digits));
    if (Math.fround(shorter) === target) return String(shorter);
  }
  return String(target); // 9 significant digits always round-trip a float32
}

export function metricText(metric) {
  if (!metric) return "-";
  if (metric.top1_agreement !== undefined) return `top-1 ${metric.top1_agreement.toFixed(4)}`;
  if (metric.cosine_min !== undefined) return `cos min ${metric.cosine_min.toFixed(5)}`;
  if (metric.step_agreement !== undefined) return `steps ${metric.step_agreement.toFixed(4)}`;
  if (metric.scaled_mean_abs !== undefined) return `mean err ${metric.scaled_mean_abs.toExponential(2)}`;
  if (metric.scaled_max_abs !== undefined) return `scaled err ${metric.scaled_max_abs.toExponential(2)}`;
  return "-";
}

export function progressBar(label) {
  const bar = el("progress", { max: 1, value: 0 });
  const text = el("span", { class: "progress-text", text: label });
  const box = el("div", { class: "progress", "data-testid": "download-progress" }, bar, text);
  box.update = (received, total, source) => {
    bar.max = total || 1;
    bar.value = received;
    const where = source === "cache" ? "from cache" : "downloading";
    text.textContent = `${label}: ${where} ${bytes(received)} / ${bytes(total)}`;
  };
  return box;
}

export function errorBox(message) {
  return el("p", { class: "error", role: "alert", "data-testid": "error", text: message });
}

export function showError(container, error) {
  container.append(errorBox(error?.message ?? String(error)));
}

// A model whose golden inputs are seeded random ones (manifest golden_data "synthetic"): every
// verdict holds on that noise only. Shown on the models page, the model page and the playground.
export const SYNTHETIC_NOTE = "Judged on seeded random inputs: give real ones with onnxport import --inputs.";

export function syntheticNote(model) {
  if (model.golden_data !== "synthetic") return null;
  return el("p", { class: "note synthetic", "data-testid": "synthetic-note", text: SYNTHETIC_NOTE });
}

// What people are shown for a model's variant: the manifest's `label` ("original (int8)": an already-int8 model's
// fp32), else its key. The key stays in URLs, data attributes and requests.
export function variantName(model, variant) {
  return model?.variants?.[variant]?.label ?? variant;
}
