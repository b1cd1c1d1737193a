// Performance page: the latest `onnxport bench` as charts, and the same browser measurements
// rerun in the visiting browser (remembered, so the plan ranks variants by this browser's figures).
import { runBench } from "../bench.js";
import { groupedBars, lineChart } from "../charts.js";
import { goldenInputs } from "../conformance.js";
import { recordMeasured } from "../../lib/speeds.js";
import { encodeTensors, leadingRows } from "../../lib/tensors.js";
import { el, errorBox, table } from "../ui.js";

const RUNTIME_SERIES = ["native 1t", "native all", "wasm-1t", "wasm", "webgpu"];

export function performancePage(built, device, bench) {
  const own = el("div", { "data-testid": "own-bench" });
  const button = el("button", { type: "button", class: "run", "data-testid": "bench-run", text: "Measure in this browser" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    own.replaceChildren(el("p", { text: "Measuring: cold start, cached start and warm runs of every variant…" }));
    try {
      const runtimes = ["wasm", "wasm-1t", ...(device.webgpu ? ["webgpu"] : [])];
      const models = Object.keys(built.models);
      const encodedInputs = {};
      for (const name of models) encodedInputs[name] = encodeTensors(leadingRows(await goldenInputs(name), 1));
      const result = await runBench({ models, runtimes, encodedInputs, runs: 10 });
      for (const r of result.results) {
        if (r.status === "ok") recordMeasured(r.sha256, r.runtime, { warmMs: r.warm.median_ms, createMs: r.cached.create_ms });
      }
      own.replaceChildren(el("h3", { text: "This browser (warm run, median ms)" }), ownTable(result.results),
        el("p", { class: "note", text: "Remembered: the plan now ranks runtimes and variants by these figures from this browser." }));
    } catch (error) {
      own.replaceChildren(errorBox(error.message));
    } finally {
      button.disabled = false;
    }
  });
  const sections = [el("h2", { text: "Performance" }), el("p", {}, button), own];
  if (!bench) {
    sections.push(el("p", { class: "note", "data-testid": "no-bench", text: "No server bench yet: run `onnxport bench` to chart native, server and headless-browser figures." }));
    return sections;
  }
  sections.push(el("p", { class: "note", text: `Latest onnxport bench: ${bench.machine.cpu}, ${bench.machine.cores} cores, onnxruntime ${bench.machine.onnxruntime}. WebGPU figures come from a software adapter (SwiftShader) and say nothing about real GPUs.` }));
  const browserRows = bench.browser?.results ?? [];
  for (const [name, data] of Object.entries(bench.models)) {
    const groups = Object.entries(data.variants).map(([variant, v]) => {
      const warm = (runtime) => browserRows.find((r) => r.model === name && r.variant === variant && r.runtime === runtime)?.warm?.median_ms ?? null;
      return { label: variant, values: { "native 1t": v.native["1"].median_ms, "native all": v.native.all.median_ms, "wasm-1t": warm("wasm-1t"), wasm: warm("wasm"), webgpu: warm("webgpu") } };
    });
    sections.push(el("h3", { text: name }), el("div", { "data-testid": `latency-chart-${name}` },
      groupedBars({ title: `${name}: latency by variant and runtime (batch 1, warm, median)`, unit: "ms", groups, series: RUNTIME_SERIES, log: true })));
    const server = data.server;
    if (server) {
      const line = (key) => server[key].map((r) => [r.clients, r.requests_per_s]);
      sections.push(el("div", { "data-testid": `throughput-chart-${name}` }, lineChart({
        title: `${name}: server throughput (fp32, requests per second)`, xLabel: "concurrent clients", yLabel: "req/s",
        lines: [{ name: "batching off", points: line("throughput_batching_off") }, { name: "batching on", points: line("throughput_batching_on") }],
      })));
    }
  }
  const variantsSeen = [...new Set(Object.values(bench.models).flatMap((m) => Object.keys(m.variants)))];
  sections.push(el("div", { "data-testid": "size-chart" }, groupedBars({
    title: "Artifact size by variant", unit: "MB", series: variantsSeen, log: true,
    groups: Object.entries(bench.models).map(([name, m]) => ({ label: name, values: Object.fromEntries(Object.entries(m.variants).map(([v, d]) => [v, d.bytes / 1024 ** 2])) })),
  })));
  return sections;
}

function ownTable(results) {
  return table(["model", "variant", "runtime", "warm ms", "cold start ms", "cached start ms", "status"], results.map((r) => ({
    cells: [r.model, r.variant, r.runtime, r.warm ? r.warm.median_ms.toFixed(3) : "-", r.cold ? r.cold.total_ms.toFixed(0) : "-",
      r.cached ? r.cached.total_ms.toFixed(0) : "-", r.status + (r.reason ? `: ${r.reason}` : "")],
  })));
}
