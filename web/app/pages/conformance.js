// Conformance page: run the checks in this browser, watch the matrix fill, download the JSON.
// `onnxport check` opens this page with ?autorun=1 and reads window.onnxportReport.
import { RUNTIMES, releaseWorkers, runConformance } from "../conformance.js";
import { deviceKind, probe, served, variants } from "../../lib/index.js";
import { AS_BUILT, servedForms } from "../../lib/internal.js";
import { el, errorBox, variantName } from "../ui.js";

export function conformancePage(built, params) {
  const chosenModels = params.get("models")?.split(",").filter(Boolean) ?? Object.keys(built.models);
  const chosenRuntimes = params.get("runtimes")?.split(",").filter(Boolean) ?? [...RUNTIMES];
  const webgpuRows = Number(params.get("webgpu_rows") ?? 2);
  const rowTimeoutMs = Number(params.get("row_timeout_s") ?? 0) * 1000;
  // On a software WebGPU adapter the page runs one WebGPU row per model unless this is ticked (`full_webgpu=1`).
  const fullWebgpu = checkbox("every WebGPU row on a software adapter", params.get("full_webgpu") === "1");
  const modelBoxes = Object.keys(built.models).map((name) => checkbox(name, chosenModels.includes(name)));
  const runtimeBoxes = RUNTIMES.map((name) => checkbox(name, chosenRuntimes.includes(name)));
  const status = el("p", { "data-testid": "conformance-status", text: "Not run yet." });
  // The matrix is this engine's column of `onnxport check`'s: say which engine and device it is.
  const engine = el("p", { "data-testid": "conformance-engine", text: "This browser: …" });
  probe().then((device) => {
    engine.textContent = `This browser: ${deviceKind(device)}.`;
  });
  const progress = el("progress", { max: 1, value: 0 });
  const matrix = el("div", { "data-testid": "conformance-matrix" });
  const download = el("p");
  const button = el("button", {
    type: "button",
    class: "run",
    "data-testid": "conformance-run",
    text: "Run the checks",
  });

  const run = async () => {
    button.disabled = true;
    const models = modelBoxes.filter((b) => b.input.checked).map((b) => b.name);
    const runtimes = runtimeBoxes.filter((b) => b.input.checked).map((b) => b.name);
    const cells = renderMatrix(matrix, built, models, runtimes);
    // What `onnxport check` reads while the page runs: the rows so far, so a stopped check still has them.
    const progressState = { total: null, browser: null, plan: null, results: [], done: false, error: null };
    window.onnxportProgress = progressState;
    status.textContent = "Running…";
    download.replaceChildren();
    try {
      const report = await runConformance({
        models,
        runtimes,
        webgpuRows,
        rowTimeoutMs,
        fullWebgpu: fullWebgpu.input.checked,
        onStart: (total, identity, plan) => {
          progress.max = total;
          Object.assign(progressState, { total, browser: identity, plan });
          leaveOut(cells, plan);
        },
        onResult: (result, done, total) => {
          progressState.results.push(result);
          progress.value = done;
          status.textContent = `${done} / ${total} checked`;
          fillCell(
            cells.get(cellKey(result.model, result.variant, result.form, result.runtime)),
            result,
            variantName(built.models[result.model], "fp32"),
          );
        },
      });
      const failed = report.results.filter((r) => ["fail", "error", "timeout"].includes(r.status)).length;
      const skipped = report.results.filter((r) => r.status === "skipped").length;
      const skippedText = skipped ? ` ${skipped} skipped (not failures; the reason is in each cell).` : "";
      status.textContent =
        (failed
          ? `Done: ${failed} of ${report.results.length} failed.`
          : `Done: none of ${report.results.length} failed.`) + skippedText;
      status.dataset.done = "true";
      status.dataset.failed = String(failed);
      status.dataset.skipped = String(skipped);
      window.onnxportReport = report;
      progressState.done = true;
      const blob = new Blob([JSON.stringify(report, null, 2)], { type: "application/json" });
      download.append(
        el("a", {
          href: URL.createObjectURL(blob),
          download: "onnxport-conformance.json",
          "data-testid": "conformance-download",
          text: "Download the report (JSON)",
        }),
      );
    } catch (error) {
      status.textContent = "Failed.";
      status.dataset.done = "true";
      status.dataset.error = error.message;
      progressState.error = error.message;
      progressState.done = true;
      matrix.append(errorBox(error.message));
    } finally {
      releaseWorkers();
      button.disabled = false;
    }
  };
  button.addEventListener("click", run);
  if (params.get("autorun") === "1") queueMicrotask(run);

  return [
    el("h2", { text: "Conformance" }),
    el("p", {
      text: "Every served variant and each of its optimized forms, in each runtime of this browser, on the model's golden inputs. A file that computes in fp32 is judged element by element against the server's onnxruntime running it, within onnxruntime-web's own floor; an fp16 or int8 file as the import judged it: its task metric against the server's fp32 on the same inputs, within its budget (its element-wise difference to the server's run is shown, not judged).",
    }),
    el(
      "p",
      {},
      "Models: ",
      modelBoxes.map((b) => b.label),
    ),
    el(
      "p",
      {},
      "Runtimes: ",
      runtimeBoxes.map((b) => b.label),
      fullWebgpu.label,
    ),
    engine,
    el("p", {}, button, " ", progress),
    status,
    download,
    matrix,
  ];
}

function checkbox(name, checked) {
  const input = el("input", { type: "checkbox", value: name, checked });
  return { name, input, label: el("label", { class: "check" }, input, ` ${name} `) };
}

function renderMatrix(container, built, models, runtimes) {
  const cells = new Map();
  const rows = [];
  for (const name of models) {
    for (const [variant, record] of variants(built.models[name]).filter(([v]) =>
      served(built.models[name]).includes(v),
    )) {
      for (const form of [AS_BUILT, ...servedForms(record).map(([f]) => f)]) {
        const tds = runtimes.map((runtime) => {
          const forRuntime = form === AS_BUILT || servedForms(record, runtime).some(([f]) => f === form);
          if (!forRuntime) return el("td", { class: "skipped", text: "not for this runtime" });
          const key = cellKey(name, variant, form, runtime);
          const td = el("td", { class: "pending", "data-cell": key, text: "…" });
          cells.set(key, td);
          return td;
        });
        const shown = variantName(built.models[name], variant);
        rows.push(
          el(
            "tr",
            { "data-model": name, "data-variant": variant },
            el("td", { text: name }),
            el("td", { text: form ? `${shown} · ${form} form` : shown }),
            tds,
          ),
        );
      }
    }
  }
  container.replaceChildren(
    el(
      "table",
      { class: "matrix" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["model", "variant", ...runtimes].map((h) => el("th", { text: h })),
        ),
      ),
      el("tbody", {}, rows),
    ),
  );
  return cells;
}

// The cells the plan has no row for (a software WebGPU adapter: one row per model) say so instead of waiting.
function leaveOut(cells, plan) {
  const planned = new Set(plan.rows.map((r) => cellKey(r.model, r.variant, r.form, r.runtime)));
  for (const [key, td] of cells) {
    if (planned.has(key)) continue;
    td.className = "skipped";
    td.textContent = `left out: one WebGPU row per model on this software adapter (${plan.webgpu.adapter})`;
  }
}

// "model/variant/runtime" for a variant as built, "model/variant+form/runtime" for a form.
function cellKey(model, variant, form, runtime) {
  return `${model}/${variant}${form ? `+${form}` : ""}/${runtime}`;
}

// fp32: what the model's fp32 variant is shown as, which a budget is judged against ("original (int8)").
function fillCell(td, result, fp32 = "fp32") {
  if (!td) return;
  td.className = result.status;
  td.dataset.status = result.status;
  if (result.basis) td.dataset.basis = result.basis;
  const worst = Math.max(0, ...Object.values(result.outputs ?? {}).map((o) => o.max_abs ?? 0));
  // fp32 is judged element by element (the floor); fp16 and int8 by the task metric against fp32
  // (the budget), with the element-wise difference to the server's run beside it.
  const judged =
    result.basis === "budget"
      ? ` · vs ${fp32}${metricText(result.metric_vs_fp32)} (budget)`
      : result.basis === "floor"
        ? `${metricText(result.metric)} (floor)`
        : "";
  const where = result.placement?.found
    ? ` · GPU ${result.placement.webgpu_nodes}, CPU ${result.placement.cpu_nodes}`
    : "";
  td.textContent =
    result.status === "pass" || result.status === "fail"
      ? `${result.status} · max ${worst.toExponential(1)}${judged}${where}`
      : `${result.status}`;
  const title = [result.reason, result.diagnostic?.text].filter(Boolean).join("\n");
  if (title) td.title = title;
  if (result.reason && result.status !== "pass") td.append(el("div", { class: "reason", text: result.reason }));
}

function metricText(metric) {
  if (!metric) return "";
  if (metric.top1_agreement !== undefined) return ` top-1 ${metric.top1_agreement.toFixed(3)}`;
  if (metric.cosine_min !== undefined) return ` cos ${metric.cosine_min.toFixed(5)}`;
  if (metric.step_agreement !== undefined) return ` steps ${metric.step_agreement.toFixed(3)}`;
  if (metric.scaled_mean_abs !== undefined) return ` mean err ${metric.scaled_mean_abs.toExponential(2)}`;
  if (metric.scaled_max_abs !== undefined) return ` max err ${metric.scaled_max_abs.toExponential(2)}`;
  return "";
}
