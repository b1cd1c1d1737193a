// The fleet page's figures, from GET /api/fleet (docs/reference/fleet.md; the contract of issue 36): the summary, the groups
// by device class, each verdict in words, and the Chart.js configurations of the time distributions.
// Pure data (no DOM, no Chart.js import), so tests/js/app/test_fleet_view.mjs checks it under node; pages/fleet.js draws it.
import { COLORS, figure } from "./performance-charts.js";

export const FLEET_SCHEMA = 1;
export const NO_REPORTS =
  "No reports yet. Pages report when they connect with connect(server, { report: true }) — see docs/reference/fleet.md.";
export const REPORTS_OFF =
  "This server has fleet reports off (setting fleet_reports): GET /api/fleet answered 204, no fleet.";
// The times a group publishes, as the page names them; the charts show one at a time (warm run first).
export const TIMES = [
  ["warm_run_ms", "warm run"],
  ["create_ms", "session creation"],
  ["first_run_ms", "first run"],
];
// A log axis when the boxes of one chart span more than this ratio (a WebGPU create beside a WebAssembly warm run).
const LOG_RATIO = 30;
// A log axis labels 1, 2 and 5 of each decade, as the performance page's do; the other grid lines stay unlabelled.
const logTick = (value) => {
  const mantissa = Number(value) / 10 ** Math.floor(Math.log10(Number(value)));
  return [1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6) ? figure(Number(value)) : "";
};

/** The document, checked for the shape this page reads; throws naming what does not fit. */
export function checkFleet(body, url = "api/fleet") {
  if (!body || typeof body !== "object")
    throw new Error(`GET ${url}: expected a JSON object, got ${JSON.stringify(body)}`);
  if (body.schema !== FLEET_SCHEMA)
    throw new Error(`GET ${url}: schema ${JSON.stringify(body.schema)}, this page reads schema ${FLEET_SCHEMA}`);
  if (!Number.isInteger(body.k))
    throw new Error(`GET ${url}: expected "k" to be an integer, got ${JSON.stringify(body.k)}`);
  if (!Array.isArray(body.groups))
    throw new Error(`GET ${url}: expected "groups" to be a list, got ${JSON.stringify(body.groups)}`);
  return body;
}

const plural = (count, one, many = `${one}s`) => `${count.toLocaleString("en-US")} ${count === 1 ? one : many}`;

/** {reports, k, classes, models, verdicts: {fail, mixed, pass, few}, text}: the line above the tables. */
export function summary(fleet) {
  const classes = new Set(fleet.groups.map((g) => g.class_key)).size;
  const models = new Set(fleet.groups.map((g) => g.model)).size;
  const verdicts = { fail: 0, mixed: 0, pass: 0, few: 0 };
  for (const g of fleet.groups) verdicts[g.verdict] = (verdicts[g.verdict] ?? 0) + 1;
  const counted = Object.entries(verdicts)
    .filter(([, n]) => n)
    .map(([v, n]) => `${n} ${v}`)
    .join(", ");
  const text =
    `${plural(fleet.reports ?? 0, "report")} accepted · k = ${fleet.k} (distinct devices a verdict or a time needs) · ` +
    `${plural(classes, "device class", "device classes")} · ${plural(models, "model")}` +
    (counted ? ` · verdicts: ${counted}` : "");
  return { reports: fleet.reports ?? 0, k: fleet.k, classes, models, verdicts, text };
}

/** The group's file as the page names it: "fp32", or "fp32 (ort form)"; `name(model, variant)` gives a variant's label. */
export function fileName(group, name = (_model, variant) => variant) {
  const variant = name(group.model, group.variant);
  return group.form ? `${variant} (${group.form} form)` : variant;
}

const compare = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/** [{key, class, clients, rows}] by class_key; each class's rows by model, variant, form and runtime. */
export function byClass(fleet) {
  const classes = new Map();
  for (const group of fleet.groups) {
    if (!classes.has(group.class_key))
      classes.set(group.class_key, { key: group.class_key, class: group.class, clients: 0, rows: [] });
    const entry = classes.get(group.class_key);
    entry.rows.push(group);
    entry.clients = Math.max(entry.clients, group.clients);
  }
  for (const entry of classes.values()) {
    entry.rows.sort(
      (a, b) =>
        compare(a.model, b.model) ||
        compare(a.variant, b.variant) ||
        compare(a.form ?? "", b.form ?? "") ||
        compare(a.runtime, b.runtime),
    );
  }
  return [...classes.values()].sort((a, b) => compare(a.key, b.key));
}

/** A group's verdict in words: "failed on 14 of 14 devices", "too few devices (2 of k=3)". */
export function verdictText(group, k) {
  const devices = plural(group.clients, "device");
  if (group.verdict === "few") return `too few devices (${group.clients} of k=${k})`;
  if (group.verdict === "fail") return `failed on ${group.fail} of ${devices}`;
  if (group.verdict === "pass") return `passed on ${group.pass} of ${devices}`;
  if (group.verdict === "mixed") return `mixed: passed on ${group.pass}, failed on ${group.fail} of ${devices}`;
  return `verdict ${JSON.stringify(group.verdict)} on ${devices}`;
}

/** The median of the failures' metric ("cosine 0.42"), or "-" when no failure gave one. */
export function metricText(group) {
  const metric = group.metric;
  if (!metric || metric.median === null || metric.median === undefined) return "-";
  return `${metric.name} ${figure(metric.median)}`;
}

/** A time's median in ms ("12.3"), or "-" when fewer than k passing devices gave it. */
export function timeText(group, which = "warm_run_ms") {
  const time = group.times?.[which];
  return time ? figure(time.median) : "-";
}

/** The table of a class: a row of cells per group (model, variant, runtime, counts, verdict, metric, time). */
export const TABLE_HEADERS = [
  "model",
  "variant",
  "runtime",
  "devices",
  "pass",
  "fail",
  "verdict",
  "metric (median of failures)",
  "warm run, ms (median)",
];

export function tableRows(entry, k, name) {
  return entry.rows.map((g) => ({
    verdict: g.verdict,
    cells: [
      g.model,
      fileName(g, name),
      g.runtime,
      String(g.clients),
      String(g.pass),
      String(g.fail),
      verdictText(g, k),
      metricText(g),
      timeText(g),
    ],
  }));
}

/** The rows of a class that have `which` time: [{label, time}], in table order. */
export function boxes(entry, which = "warm_run_ms", name) {
  return entry.rows
    .filter((g) => g.times?.[which])
    .map((g) => ({
      label: `${g.model} ${fileName(g, name)} · ${g.runtime}`,
      model: g.model,
      runtime: g.runtime,
      time: g.times[which],
    }));
}

const LEGEND = [
  ["p25 to p75 (box)", "#bbbbbb"],
  ["p10 to p90 (whisker)", "#666666"],
  ["median", "#111111"],
];

/** Whether the boxes' range calls for a log axis: p90's largest over p10's smallest beyond LOG_RATIO. */
export function wantsLog(items) {
  const low = Math.min(...items.map((b) => b.time.p10).filter((v) => v > 0));
  const high = Math.max(...items.map((b) => b.time.p90));
  return Number.isFinite(low) && Number.isFinite(high) && high / low > LOG_RATIO;
}

/**
 * A class's time distribution as a Chart.js configuration (null when no row has the time): per row, a floating bar
 * from p25 to p75 (the box), a thin one from p10 to p90 (the whisker) behind it, and the median as a line marker.
 * Colored by model. `log`: null picks the axis from the range (wantsLog).
 */
export function timeConfig(entry, { which = "warm_run_ms", log = null, name } = {}) {
  const items = boxes(entry, which, name);
  if (!items.length) return null;
  const what = TIMES.find(([key]) => key === which)?.[1] ?? which;
  const logScale = log ?? wantsLog(items);
  const models = [...new Set(items.map((b) => b.model))];
  const colors = items.map((b) => COLORS[models.indexOf(b.model) % COLORS.length]);
  const datasets = [
    {
      label: "p25 to p75",
      type: "bar",
      data: items.map((b) => [b.time.p25, b.time.p75]),
      grouped: false,
      order: 1,
      backgroundColor: colors.map((c) => `${c}99`),
      borderColor: colors,
      borderWidth: 1,
      barPercentage: 0.6,
      minBarLength: 2,
    },
    {
      label: "p10 to p90",
      type: "bar",
      data: items.map((b) => [b.time.p10, b.time.p90]),
      grouped: false,
      order: 2,
      backgroundColor: colors,
      borderWidth: 0,
      barPercentage: 0.06,
      minBarLength: 1,
    },
    {
      label: "median",
      type: "line",
      data: items.map((b) => b.time.median),
      showLine: false,
      order: 0,
      pointStyle: "line",
      pointRadius: 14,
      pointHoverRadius: 16,
      pointBorderWidth: 3,
      borderColor: "#111",
      backgroundColor: "#111",
    },
  ];
  const describe = (b) =>
    `median ${figure(b.time.median)} ms; p10 ${figure(b.time.p10)}, p25 ${figure(b.time.p25)}, ` +
    `p75 ${figure(b.time.p75)}, p90 ${figure(b.time.p90)} ms; ${plural(b.time.clients, "device")} that passed`;
  return {
    type: "bar",
    data: { labels: items.map((b) => b.label), datasets },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false },
      plugins: {
        title: {
          display: true,
          text: `${entry.key}: ${what} time by model, variant and runtime (one value per device)`,
          font: { size: 14, weight: "600" },
          align: "start",
        },
        // The boxes are colored by model: the legend names the parts in grey.
        legend: {
          position: "top",
          align: "start",
          labels: {
            generateLabels: (chart) =>
              LEGEND.map(([text, color], datasetIndex) => ({
                text,
                datasetIndex,
                fillStyle: color,
                strokeStyle: color,
                lineWidth: 0,
                hidden: !chart.isDatasetVisible(datasetIndex),
              })),
          },
        },
        tooltip: {
          filter: (item) => item.datasetIndex === 2,
          callbacks: { label: (item) => describe(items[item.dataIndex]) },
        },
      },
      scales: {
        x: { title: { display: true, text: "model, variant · runtime" } },
        y: {
          ...(logScale ? { type: "logarithmic" } : { type: "linear", beginAtZero: true }),
          title: { display: true, text: `${what}, ms${logScale ? " (log scale)" : ""}` },
          ticks: { callback: logScale ? logTick : (value) => figure(Number(value)) },
        },
      },
    },
  };
}
