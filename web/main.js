// The models page: one table per model, read from the manifest the build wrote.
const main = document.getElementById("models");

function cell(text) {
  const td = document.createElement("td");
  td.textContent = text;
  return td;
}

function variantRow(name, v) {
  const tr = document.createElement("tr");
  const metric = v.vs_fp32?.metric ?? {};
  const shown = metric.top1_agreement !== undefined ? `top-1 ${metric.top1_agreement.toFixed(4)}`
    : metric.cosine_min !== undefined ? `cos min ${metric.cosine_min.toFixed(5)}` : "";
  tr.append(cell(name), cell(v.precision), cell(v.bytes ? `${(v.bytes / 1024).toFixed(1)} KB` : "-"),
    cell(shown), cell(v.status + (v.reason ? `: ${v.reason}` : "")));
  if (v.status !== "ok") tr.className = "rejected";
  return tr;
}

async function show() {
  const response = await fetch("/api/manifest");
  if (!response.ok) throw new Error(`GET /api/manifest: HTTP ${response.status}`);
  const manifest = await response.json();
  main.replaceChildren();
  for (const [name, model] of Object.entries(manifest.models)) {
    const heading = document.createElement("h2");
    heading.textContent = `${name}: ${model.description}`;
    const table = document.createElement("table");
    const head = document.createElement("tr");
    head.append(...["variant", "precision", "size", "vs fp32", "status"].map((t) => {
      const th = document.createElement("th");
      th.textContent = t;
      return th;
    }));
    table.append(head, ...Object.entries(model.variants).map(([v, record]) => variantRow(v, record)));
    main.append(heading, table);
  }
  if (!Object.keys(manifest.models).length) main.textContent = "No models yet: run `onnxport build`.";
}

show().catch((error) => {
  main.replaceChildren();
  const p = document.createElement("p");
  p.className = "error";
  p.textContent = `Could not load the models: ${error.message}`;
  main.append(p);
});
