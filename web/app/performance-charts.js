// Chart.js configurations for the performance page, built from the latest `onnxport bench` report.
// Pure data (no DOM, no Chart.js import), so tests/js/app/ checks them under node; pages/performance.js draws them.

import { CHECKED, runtime } from "../lib/internal.js";

export const COLORS = ["#1f5fbf", "#e07b00", "#2a9d3c", "#b03a8c", "#6a4fc8", "#777777", "#0f8b8d", "#a33b20"];
const NATIVE_1T = "native 1t";
const NATIVE_ALL = "native all";
// The bench's browser runtimes (runtimes.js: checked), from the fewest resources to the most, as
// the native series: one thread, all threads, then the GPU.
const BROWSER_SERIES = CHECKED.map(runtime).sort(
  (a, b) => Number(a.gpu) - Number(b.gpu) || Number(a.threads === "all") - Number(b.threads === "all"),
);
export const RUNTIMES = [NATIVE_1T, NATIVE_ALL, ...BROWSER_SERIES.map((r) => r.label)];
const KEY_OF = new Map(BROWSER_SERIES.map((r) => [r.label, r.key]));
// The start chart's runtime: WebAssembly with the page's threads, what a page with threads starts.
export const START_RUNTIME = CHECKED.find((key) => runtime(key).threads === "all");
const MB = 1024 ** 2;

// What people are shown for a variant of a model's bench figures: bench.json's `label` ("original (int8)": an
// already-int8 model's fp32), else its key.
export function variantLabel(data, variant) {
  return data?.variants?.[variant]?.label ?? variant;
}

const significant = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3, useGrouping: false });

/** A figure as the charts print it: three significant digits, no grouping ("0.0123", "86.3", "1230"). */
export function figure(value) {
  return value === null || value === undefined || !Number.isFinite(value) ? "-" : significant.format(value);
}

const present = (item) => item.raw !== null && item.raw !== undefined;
const linearTick = (value) => figure(Number(value));
// A log axis labels 1, 2 and 5 of each decade (as Chart.js's own log ticks do); the other grid lines stay unlabelled.
const logTick = (value) => {
  const mantissa = Number(value) / 10 ** Math.floor(Math.log10(Number(value)));
  return [1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6) ? figure(Number(value)) : "";
};

function baseOptions({ title, x, y, tooltip, legend = {} }) {
  return {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    // Hovering anywhere over a group shows every series there, not only the bar under the pointer.
    interaction: { mode: "index", intersect: false },
    plugins: {
      title: { display: true, text: title, font: { size: 14, weight: "600" }, align: "start" },
      legend: { position: "top", align: "start", ...legend },
      tooltip: { filter: present, callbacks: tooltip },
    },
    scales: {
      x: { title: { display: true, text: x } },
      y: {
        ...y.scale,
        title: { display: true, text: y.title },
        ticks: { callback: y.scale.type === "logarithmic" ? logTick : linearTick },
      },
    },
  };
}

function bars(label, data, index) {
  const color = COLORS[index % COLORS.length];
  return { label, data, backgroundColor: color, borderColor: color, borderWidth: 0, minBarLength: 2 };
}

/** Warm latency by variant (x) and runtime (one series each; runtimes the bench did not measure are left out). */
export function latencyConfig(name, data, browserRows = [], { log = false } = {}) {
  const variants = Object.keys(data.variants);
  const warm = (variant, runtime) =>
    browserRows.find((r) => r.model === name && r.variant === variant && r.runtime === runtime && !r.form)?.warm
      ?.median_ms ?? null;
  const value = (variant, runtime) => {
    const native = data.variants[variant].native ?? {};
    if (runtime === NATIVE_1T) return native["1"]?.median_ms ?? null;
    if (runtime === NATIVE_ALL) return native.all?.median_ms ?? null;
    return warm(variant, KEY_OF.get(runtime));
  };
  const datasets = RUNTIMES.map((runtime, i) =>
    bars(
      runtime,
      variants.map((v) => value(v, runtime)),
      i,
    ),
  ).filter((d) => d.data.some((v) => v !== null));
  return {
    type: "bar",
    data: { labels: variants.map((v) => variantLabel(data, v)), datasets },
    options: baseOptions({
      title: `${name}: latency by variant and runtime (batch 1, warm, median)`,
      x: "variant",
      // Linear by default, so bar heights compare as the figures do; the log axis (a toggle) keeps its tick values.
      y: {
        title: `latency, ms${log ? " (log scale)" : ""}`,
        scale: log ? { type: "logarithmic" } : { type: "linear", beginAtZero: true },
      },
      tooltip: {
        title: (items) => `${name} ${items[0]?.label ?? ""}`,
        label: (item) => `${item.dataset.label}: ${figure(item.raw)} ms`,
      },
    }),
  };
}

/** The throughput rows of a model's server bench: waitress batching off and on, then `engines` (Ray Serve) rows. */
export function throughputRows(server) {
  return [
    { engine: "waitress", replicas: 1, batching: "off", throughput: server.throughput_batching_off ?? [] },
    { engine: "waitress", replicas: 1, batching: "on", throughput: server.throughput_batching_on ?? [] },
    ...(server.engines ?? []),
  ];
}

function rowLabel(row) {
  if (row.engine === "waitress") return `waitress, batching ${row.batching}`;
  const engine = row.engine === "ray" ? "Ray Serve" : row.engine;
  return `${engine} ${row.replicas} replica${row.replicas === 1 ? "" : "s"}, batching ${row.batching}`;
}

/**
 * Requests per second against concurrent clients: a line per (engine, replicas, batching); batching on is dashed.
 * fp32: what the model's fp32 variant, the one served, is shown as (variantLabel).
 */
export function throughputConfig(name, server, fp32 = "fp32") {
  const rows = throughputRows(server);
  const clients = [...new Set(rows.flatMap((r) => r.throughput.map((t) => t.clients)))].sort((a, b) => a - b);
  const engines = [...new Set(rows.map((r) => `${r.engine}/${r.replicas}`))];
  const at = (row, c) => row.throughput.find((t) => t.clients === c);
  const p90 = rows.map((row) => clients.map((c) => at(row, c)?.p90_ms ?? null));
  const datasets = rows.map((row) => {
    const color = COLORS[engines.indexOf(`${row.engine}/${row.replicas}`) % COLORS.length];
    return {
      label: rowLabel(row),
      data: clients.map((c) => at(row, c)?.requests_per_s ?? null),
      borderColor: color,
      backgroundColor: color,
      borderDash: row.batching === "on" ? [6, 4] : [],
      pointStyle: row.batching === "on" ? "rectRot" : "circle",
      pointRadius: 4,
      borderWidth: 2,
      spanGaps: true,
    };
  });
  return {
    type: "line",
    data: { labels: clients.map(String), datasets },
    options: baseOptions({
      title: `${name}: server throughput (${fp32}, batch-1 requests)`,
      x: "concurrent clients",
      y: { title: "throughput, requests/s", scale: { type: "linear", beginAtZero: true } },
      // Each line's marker in the legend (circle: batching off, diamond: on), not a filled box.
      legend: { labels: { usePointStyle: true, boxHeight: 7 } },
      tooltip: {
        title: (items) => `${items[0]?.label ?? ""} concurrent client${items[0]?.label === "1" ? "" : "s"}`,
        label: (item) =>
          `${item.dataset.label}: ${figure(item.raw)} req/s, p90 ${figure(p90[item.datasetIndex][item.dataIndex])} ms`,
      },
    }),
  };
}

/**
 * Cached start on WebAssembly (all threads) by variant (x) and file (a series each: the variant as built
 * and each optimized form), as stacked stages: the session's creation and its first run, the part the
 * form changes; the load and the runtime's start, beside each other before it, are the tooltip's. data: the model's
 * bench figures, whose labels name the variants.
 */
export function startConfig(name, browserRows = [], data = null) {
  const rows = browserRows.filter(
    (r) => r.model === name && r.runtime === START_RUNTIME && r.status === "ok" && r.cached,
  );
  const variants = [...new Set(rows.map((r) => r.variant))];
  const files = [...new Set(rows.map((r) => r.form ?? "as built"))];
  const row = (variant, file) => rows.find((r) => r.variant === variant && (r.form ?? "as built") === file);
  const datasets = files.flatMap((file, i) => [
    {
      ...bars(
        `${file}: create`,
        variants.map((v) => row(v, file)?.cached.create_ms ?? null),
        i,
      ),
      stack: file,
    },
    {
      ...bars(
        `${file}: first run`,
        variants.map((v) => row(v, file)?.cached.first_run_ms ?? null),
        i,
      ),
      stack: file,
      backgroundColor: `${COLORS[i % COLORS.length]}88`,
    },
  ]);
  const options = baseOptions({
    title: `${name}: cached start by file, WebAssembly (session creation, then the first run)`,
    x: "variant",
    y: { title: "ms", scale: { type: "linear", beginAtZero: true, stacked: true } },
    tooltip: {
      title: (items) => `${name} ${items[0]?.label ?? ""}`,
      label: (item) => {
        const file = item.dataset.stack,
          r = row(variants[item.dataIndex], file);
        return `${item.dataset.label}: ${figure(item.raw)} ms (start ${figure(r?.cached.total_ms)} ms, load ${figure(r?.cached.load_ms)} ms beside runtime start ${figure(r?.cached.init_ms)} ms; warm ${figure(r?.warm?.median_ms)} ms)`;
      },
    },
  });
  options.scales.x.stacked = true; // bars of one `stack` (one file) pile up; files stand side by side
  return { type: "bar", data: { labels: variants.map((v) => variantLabel(data, v)), datasets }, options };
}

/**
 * Artifact size by model (x) and variant (a series each), in MB on a linear axis, or with `relative`
 * as a fraction of the model's fp32 artifact (small models' bars are too short to see next to large ones in MB).
 */
export function sizeConfig(bench, { relative = false } = {}) {
  const models = Object.keys(bench.models);
  const variants = [...new Set(models.flatMap((m) => Object.keys(bench.models[m].variants)))];
  const bytes = (model, variant) => bench.models[model].variants[variant]?.bytes ?? null;
  const fp32 = (model) => bytes(model, "fp32");
  const shown = (model, variant) => {
    const b = bytes(model, variant);
    if (b === null) return null;
    if (!relative) return b / MB;
    return fp32(model) ? b / fp32(model) : null;
  };
  const datasets = variants.map((variant, i) =>
    bars(
      variant,
      models.map((m) => shown(m, variant)),
      i,
    ),
  );
  return {
    type: "bar",
    data: { labels: models, datasets },
    options: baseOptions({
      title: "Artifact size by variant",
      x: "model",
      y: { title: relative ? "size, x the model's fp32" : "size, MB", scale: { type: "linear", beginAtZero: true } },
      tooltip: {
        label: (item) => {
          const model = models[item.dataIndex],
            variant = item.dataset.label;
          const data = bench.models[model],
            b = bytes(model, variant);
          const ratio = fp32(model) ? ` (${figure(b / fp32(model))}x ${variantLabel(data, "fp32")})` : "";
          return `${variantLabel(data, variant)}: ${figure(b / MB)} MB${ratio}`;
        },
      },
    }),
  };
}
