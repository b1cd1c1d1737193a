// The performance page's size / cold-start / warm-run chart of one model: each file the bench measured in a
// browser runtime (a variant as built, or one of its forms) at its size (x), in two panels that share that axis:
// its cold start (the download at a stated bandwidth, plus the session's creation and the first run that the
// bench measured on an empty cache) and its warm run (the bench's median). Per runtime and panel, the files no
// other file of that runtime beats on both size and time are the frontier: filled and joined by a line; the rest
// are hollow. Pure data (no DOM, no Chart.js import), like performance-charts.js, so tests/js/app/ checks it under node.
// Variants are whatever bench.json holds: none is named here.

import { CHECKED, runtime } from "../lib/internal.js";
import { COLORS, figure, variantLabel } from "./performance-charts.js";

const MB = 1024 ** 2;
// The bandwidths the page offers for the download part, in Mbit/s, and the one it starts with: 10 Mbit/s, the rate
// at which the plan weighs an unmeasured download (web/lib/choice/cost.js, RANK_BYTES_PER_MS).
export const BANDWIDTHS_MBPS = Object.freeze([1, 5, 10, 25, 100]);
export const DEFAULT_MBPS = 10;
// The browser runtimes in the latency chart's order: one thread, all threads, then the GPU.
const BROWSER = CHECKED.map(runtime).sort(
  (a, b) => Number(a.gpu) - Number(b.gpu) || Number(a.threads === "all") - Number(b.threads === "all"),
);

/** Milliseconds to download `bytes` at `mbps` megabits (10^6 bits) per second. */
export function downloadMs(bytes, mbps) {
  return (bytes * 8) / (mbps * 1000);
}

/**
 * For each point ({size, ms}), whether it is on the frontier: no other point is at most as large and at most as
 * slow and strictly better in one of the two. Equal points are both on it; a point without a figure is on nothing.
 * @returns {boolean[]}
 */
export function onFrontier(points) {
  const known = (p) => Number.isFinite(p?.size) && Number.isFinite(p?.ms);
  return points.map(
    (p) =>
      known(p) &&
      !points.some((q) => known(q) && q !== p && q.size <= p.size && q.ms <= p.ms && (q.size < p.size || q.ms < p.ms)),
  );
}

/**
 * The model's measured files per browser runtime, in the latency chart's order (runtimes with no ok row left
 * out): {key, label, points}, each point {variant, form, name (as people are shown it), bytes, size (MB),
 * download, create, first (ms), cold (their sum), warm (median ms), coldFrontier, warmFrontier}.
 */
export function frontierSeries(name, browserRows = [], data = null, { mbps = DEFAULT_MBPS } = {}) {
  const rows = browserRows.filter(
    (r) => r.model === name && r.status === "ok" && r.cold && r.warm && Number.isFinite(r.bytes),
  );
  return BROWSER.map(({ key, label }) => {
    const points = rows
      .filter((r) => r.runtime === key)
      .map((r) => {
        const download = downloadMs(r.bytes, mbps),
          create = r.cold.create_ms,
          first = r.cold.first_run_ms;
        return {
          variant: r.variant,
          form: r.form ?? null,
          name: `${variantLabel(data, r.variant)}${r.form ? ` (${r.form} form)` : ""}`,
          bytes: r.bytes,
          size: r.bytes / MB,
          download,
          create,
          first,
          cold: download + create + first,
          warm: r.warm.median_ms,
        };
      })
      .sort((a, b) => a.size - b.size || a.name.localeCompare(b.name));
    const cold = onFrontier(points.map((p) => ({ size: p.size, ms: p.cold })));
    const warm = onFrontier(points.map((p) => ({ size: p.size, ms: p.warm })));
    points.forEach((p, i) => Object.assign(p, { coldFrontier: cold[i], warmFrontier: warm[i] }));
    return { key, label, points };
  }).filter((s) => s.points.length);
}

const PANELS = [
  { axis: "yCold", field: "cold", flag: "coldFrontier", what: "cold start" },
  { axis: "yWarm", field: "warm", flag: "warmFrontier", what: "warm run" },
];

/**
 * The Chart.js scatter configuration: per runtime and panel, the files as points (frontier filled and larger,
 * the rest hollow) and the frontier as a line of its own (no legend entry, no tooltip). Both y axes are
 * logarithmic (a software WebGPU's figures are 100x WebAssembly's) and stacked: cold start above, warm run below.
 */
export function frontierConfig(name, browserRows = [], data = null, { mbps = DEFAULT_MBPS } = {}) {
  const series = frontierSeries(name, browserRows, data, { mbps });
  const datasets = series.flatMap((s, i) => {
    const color = COLORS[i % COLORS.length];
    return PANELS.flatMap(({ axis, field, flag, what }) => {
      const points = s.points.map((p) => ({ ...p, x: p.size, y: p[field] }));
      const front = points.filter((p) => p[flag]);
      return [
        {
          label: `${s.label} ${what}`,
          runtime: s.key,
          panel: field,
          yAxisID: axis,
          data: points,
          borderColor: color,
          backgroundColor: points.map((p) => (p[flag] ? color : "#ffffff")),
          pointRadius: points.map((p) => (p[flag] ? 5 : 3.5)),
          pointHoverRadius: 7,
          borderWidth: 2,
          pointStyle: field === "cold" ? "circle" : "rectRot",
          showLine: false,
        },
        {
          label: `${s.label} ${what} frontier`,
          runtime: s.key,
          panel: field,
          frontierLine: true,
          yAxisID: axis,
          data: front,
          borderColor: color,
          backgroundColor: color,
          pointRadius: 0,
          pointHitRadius: 0,
          borderWidth: 1.5,
          borderDash: [5, 3],
          showLine: true,
        },
      ];
    });
  });
  // Every tick is drawn (Chart.js would skip some on a short panel); only 1, 2 and 5 of each decade are labelled.
  const logTicks = {
    autoSkip: false,
    callback: (value) => {
      const mantissa = Number(value) / 10 ** Math.floor(Math.log10(Number(value)) + 1e-9); // 0.999... is 1
      return [1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6) ? figure(Number(value)) : "";
    },
  };
  const notLine = (item) => !item.dataset.frontierLine;
  return {
    type: "scatter",
    data: { datasets },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "nearest", intersect: true },
      plugins: {
        title: {
          display: true,
          text: `${name}: file size against cold start and warm run, per runtime (download at ${mbps} Mbit/s)`,
          font: { size: 14, weight: "600" },
          align: "start",
        },
        subtitle: {
          display: true,
          align: "start",
          text: `Cold start = download at ${mbps} Mbit/s + session creation + first run (bench, empty cache). Filled: on the frontier (no other file on that runtime is both smaller and faster); hollow: beaten on both.`,
        },
        legend: {
          position: "top",
          align: "start",
          labels: {
            usePointStyle: true,
            boxHeight: 7,
            filter: (item, chartData) => !chartData.datasets[item.datasetIndex].frontierLine,
          },
        },
        tooltip: {
          filter: notLine,
          callbacks: {
            title: (items) => `${name} ${items[0]?.raw?.name ?? ""}`,
            label: (item) => {
              const p = item.raw,
                frontier = item.dataset.panel === "cold" ? p.coldFrontier : p.warmFrontier;
              const parts =
                item.dataset.panel === "cold"
                  ? ` = download ${figure(p.download)} + create ${figure(p.create)} + first run ${figure(p.first)} ms`
                  : "";
              return `${item.dataset.label}: ${figure(p.y)} ms${parts}; ${figure(p.size)} MB${frontier ? ", on the frontier" : ""}`;
            },
          },
        },
      },
      scales: {
        x: {
          type: "linear",
          beginAtZero: true,
          title: { display: true, text: "file size, MB" },
          ticks: { callback: (v) => figure(Number(v)) },
        },
        // Chart.js stacks the axes of one stack from the bottom up in the order given: warm below, cold above.
        yWarm: {
          type: "logarithmic",
          position: "left",
          stack: "frontier",
          stackWeight: 1,
          title: { display: true, text: "warm run, ms" },
          ticks: logTicks,
        },
        yCold: {
          type: "logarithmic",
          position: "left",
          stack: "frontier",
          stackWeight: 1,
          offset: true,
          title: { display: true, text: `cold start, ms (${mbps} Mbit/s)` },
          ticks: logTicks,
        },
      },
    },
  };
}
