// Performance page: the latest `onnxport bench` as charts, and the same browser measurements
// rerun in the visiting browser (remembered, so the plan ranks variants by this browser's figures).
// Chart.js comes as its UMD bundle (node_modules/chart.js/dist/chart.umd.min.js, served at /vendor/chartjs/ and
// named "chart.js" by web/index.html's import map): that file is self-contained and
// sets globalThis.Chart when evaluated, as a module too. The ESM build would also need "@kurkle/color" (a bare
// specifier into a second package, to be served and mapped). Either loads under script-src 'self' and draws on a
// canvas, so the CSP stays as it is (Chart.js sizes the canvas through element.style, which style-src does not govern).
import "chart.js";
import { runBench } from "../bench.js";
import { goldenInputs } from "../conformance.js";
import { BANDWIDTHS_MBPS, DEFAULT_MBPS, frontierConfig } from "../frontier-chart.js";
import {
  latencyConfig,
  sizeConfig,
  START_RUNTIME,
  startConfig,
  throughputConfig,
  variantLabel,
} from "../performance-charts.js";
import { CHECKED, encodeTensors, leadingRows, recordMeasured, unavailableReason } from "../../lib/internal.js";
import { el, errorBox, table, variantName } from "../ui.js";

const { Chart } = globalThis;
Chart.defaults.font.family = "system-ui, sans-serif";
Chart.defaults.color = "#444";
// The charts of the page last drawn: Chart.js keeps every instance (and its resize observer) until destroyed.
let drawnCharts = [];

export function performancePage(built, device, bench) {
  for (const drawn of drawnCharts) drawn.destroy();
  drawnCharts = [];
  const own = el("div", { "data-testid": "own-bench" });
  const button = el("button", {
    type: "button",
    class: "run",
    "data-testid": "bench-run",
    text: "Measure in this browser",
  });
  button.addEventListener("click", async () => {
    button.disabled = true;
    const watch = benchWatch(built);
    own.replaceChildren(watch.element);
    try {
      const runtimes = CHECKED.filter((runtime) => !unavailableReason(runtime, device));
      const models = Object.keys(built.models);
      const encodedInputs = {};
      for (const name of models) {
        watch.say(`Reading the golden inputs of ${name}…`);
        encodedInputs[name] = encodeTensors(leadingRows(await goldenInputs(name), 1));
      }
      watch.say("Planning the steps…");
      const result = await runBench({
        models,
        runtimes,
        encodedInputs,
        runs: 10,
        onProgress: watch.progress,
        onStepDone: watch.stepDone,
      });
      for (const r of result.results) {
        if (r.status === "ok")
          recordMeasured(r.sha256, r.runtime, { warmMs: r.warm.median_ms, createMs: r.cached.create_ms });
      }
      watch.finish(result.results);
      own.append(
        el("h3", { text: "This browser (warm run, median ms)" }),
        ownTable(built, result.results),
        el("p", {
          class: "note",
          text: "Remembered: the plan now ranks runtimes and variants by these figures from this browser.",
        }),
      );
    } catch (error) {
      watch.stop();
      own.append(errorBox(`The measurement stopped: ${error.message}`));
    } finally {
      button.disabled = false;
    }
  });
  const sections = [el("h2", { text: "Performance" }), el("p", {}, button), own];
  if (!bench) {
    sections.push(
      el("p", {
        class: "note",
        "data-testid": "no-bench",
        text: "No server bench yet: run `onnxport bench` to chart native, server and headless-browser figures.",
      }),
    );
    return sections;
  }
  sections.push(
    el("p", {
      class: "note",
      text: `Latest onnxport bench: ${bench.machine.cpu}, ${bench.machine.cores} cores, onnxruntime ${bench.machine.onnxruntime}. WebGPU figures come from a software adapter (SwiftShader) and say nothing about real GPUs.`,
    }),
  );
  const browserRows = bench.browser?.results ?? [];
  for (const [name, data] of Object.entries(bench.models)) {
    sections.push(
      el("h3", { text: name }),
      ...chart(`latency-chart-${name}`, (log) => latencyConfig(name, data, browserRows, { log }), "log scale"),
    );
    if (browserRows.some((r) => r.model === name && r.runtime === START_RUNTIME && r.status === "ok")) {
      sections.push(...chart(`start-chart-${name}`, () => startConfig(name, browserRows, data)));
    }
    if (browserRows.some((r) => r.model === name && r.status === "ok" && r.cold)) {
      sections.push(
        ...bandwidthChart(`frontier-chart-${name}`, (mbps) => frontierConfig(name, browserRows, data, { mbps })),
      );
    }
    if (data.server)
      sections.push(
        ...chart(`throughput-chart-${name}`, () => throughputConfig(name, data.server, variantLabel(data, "fp32"))),
      );
  }
  sections.push(
    el("h3", { text: "Artifact sizes" }),
    ...chart("size-chart", (relative) => sizeConfig(bench, { relative }), "relative to each model's fp32"),
  );
  return sections;
}

// A Chart.js chart in its own box (Chart.js sizes the canvas to its parent), and a checkbox that redraws it with
// build(true) when the chart has an alternative view.
function chart(testid, build, alternative = null) {
  const config = build(false);
  const canvas = el("canvas", { role: "img", "aria-label": config.options.plugins.title.text });
  const box = el("div", { class: "chart", "data-testid": testid }, canvas);
  const drawn = new Chart(canvas, config); // drawn again at its size once the page puts it in the document
  drawnCharts.push(drawn);
  if (!alternative) return [box];
  const input = el("input", { type: "checkbox", "data-testid": `${testid}-toggle` });
  input.addEventListener("change", () => {
    const next = build(input.checked);
    drawn.data = next.data;
    drawn.options = next.options;
    drawn.update();
  });
  return [box, el("label", { class: "chart-toggle" }, input, ` ${alternative}`)];
}

// A chart whose figures depend on a download bandwidth, and the choice of it (Mbit/s) that redraws it.
function bandwidthChart(testid, build) {
  const [box] = chart(testid, () => build(DEFAULT_MBPS));
  box.classList.add("tall"); // two panels, one above the other
  const drawn = drawnCharts.at(-1);
  const select = el(
    "select",
    { "data-testid": `${testid}-bandwidth` },
    BANDWIDTHS_MBPS.map((mbps) =>
      el("option", { value: String(mbps), selected: mbps === DEFAULT_MBPS, text: `${mbps} Mbit/s` }),
    ),
  );
  select.addEventListener("change", () => {
    const next = build(Number(select.value));
    drawn.data = next.data;
    drawn.options = next.options;
    drawn.update();
  });
  return [box, el("label", { class: "chart-toggle" }, "download bandwidth for the cold start ", select)];
}

// What the measurement is doing and how far it is: step k of n (model, variant and form, runtime), the stage
// of that step and how long it has taken, and each step that failed, with its reason, as it fails. A variant is
// named as the manifest shows it (its label).
function benchWatch(built) {
  const bar = el("progress", { max: 1, value: 0, "data-testid": "bench-progress-bar" });
  const text = el("span", { class: "progress-text", "data-testid": "bench-progress", text: "Starting…" });
  const failures = el("ul", { class: "failures", "data-testid": "bench-failures" });
  let line = "Starting…";
  let since = performance.now();
  const draw = () => {
    const seconds = (performance.now() - since) / 1000;
    text.textContent = seconds >= 2 ? `${line} (${seconds.toFixed(0)} s)` : line;
  };
  const timer = setInterval(draw, 1000); // a long stage (a cold start of a large model) still shows it is alive
  const say = (next) => {
    line = next;
    since = performance.now();
    draw();
  };
  const stop = () => clearInterval(timer);
  const stepName = (w) =>
    `${w.model} ${variantName(built.models[w.model], w.variant)}${w.form === "as built" ? "" : ` (${w.form} form)`} on ${w.runtime}`;
  return {
    element: el("div", { class: "bench-progress" }, el("div", { class: "progress" }, bar, text), failures),
    say,
    stop,
    progress(_stage, where) {
      bar.max = where.steps;
      bar.value = where.step - 1;
      say(`Step ${where.step} of ${where.steps}: ${stepName(where)}: ${where.stage}`);
    },
    stepDone(row, where) {
      bar.value = where.step;
      if (row.status !== "ok")
        failures.append(
          el("li", {
            class: "error",
            text: `Step ${where.step} of ${where.steps} failed (${stepName(where)}): ${row.reason}`,
          }),
        );
    },
    finish(results) {
      stop();
      const measured = results.filter((r) => r.status !== "skipped");
      const failed = measured.filter((r) => r.status !== "ok").length;
      bar.max = 1;
      bar.value = 1;
      text.dataset.done = "true";
      text.textContent = `Done: ${measured.length} step${measured.length === 1 ? "" : "s"} measured, ${failed ? `${failed} failed (below)` : "none failed"}.`;
    },
  };
}

function ownTable(built, results) {
  return table(
    ["model", "variant", "form", "runtime", "warm ms", "cold start ms", "cached start ms", "status"],
    results.map((r) => ({
      cells: [
        r.model,
        variantName(built.models[r.model], r.variant),
        r.form ?? "as built",
        r.runtime,
        r.warm ? r.warm.median_ms.toFixed(3) : "-",
        r.cold ? r.cold.total_ms.toFixed(0) : "-",
        r.cached ? r.cached.total_ms.toFixed(0) : "-",
        r.status + (r.reason ? `: ${r.reason}` : ""),
      ],
    })),
  );
}
