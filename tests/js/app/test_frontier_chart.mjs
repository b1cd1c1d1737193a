// The performance page's size / cold-start / warm-run chart: the frontier rule, the figures it takes from a
// bench report's browser rows (and only those), the stated bandwidth, and the Chart.js configuration.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  DEFAULT_MBPS,
  downloadMs,
  frontierConfig,
  frontierSeries,
  onFrontier,
} from "../../../web/app/frontier-chart.js";

const MB = 1024 ** 2;

test("the frontier: points no other point beats on both size and time", () => {
  const points = [
    { size: 1, ms: 50 }, // smallest: on it
    { size: 2, ms: 40 }, // larger but faster: on it
    { size: 3, ms: 45 }, // beaten by (2, 40) on both
    { size: 4, ms: 10 }, // fastest: on it
    { size: 4, ms: 12 }, // as large as (4, 10) and slower: beaten
    { size: 5, ms: 10 }, // as fast as (4, 10) and larger: beaten
  ];
  assert.deepEqual(onFrontier(points), [true, true, false, true, false, false]);
});

test("the frontier: equal points both stay on it; a point without a figure is on nothing and beats nothing", () => {
  assert.deepEqual(
    onFrontier([
      { size: 2, ms: 3 },
      { size: 2, ms: 3 },
    ]),
    [true, true],
  );
  assert.deepEqual(
    onFrontier([
      { size: 1, ms: null },
      { size: 2, ms: 3 },
      { size: 1, ms: Number.NaN },
    ]),
    [false, true, false],
  );
  assert.deepEqual(onFrontier([]), []);
  assert.deepEqual(onFrontier([{ size: 7, ms: 7 }]), [true]);
});

test("download time: bytes over megabits per second", () => {
  assert.equal(downloadMs(1_250_000, 10), 1000); // 10 Mbit/s = 1.25 MB/s
  assert.equal(downloadMs(1_250_000, 100), 100);
  assert.equal(DEFAULT_MBPS, 10);
});

// Rows as bench.json holds them; the variant names are made up: the chart names none itself.
const row = (variant, runtime, bytes, create, first, warm, extra = {}) => ({
  model: "m",
  variant,
  form: null,
  runtime,
  status: "ok",
  bytes,
  cold: { total_ms: 9999, create_ms: create, first_run_ms: first, load_ms: 1, init_ms: 1 },
  cached: { create_ms: 1, first_run_ms: 1, total_ms: 2 },
  warm: { median_ms: warm },
  ...extra,
});
const ROWS = [
  row("big", "wasm", 8 * MB, 200, 100, 40),
  row("mid", "wasm", 2 * MB, 150, 80, 60),
  row("small-slow", "wasm", 1 * MB, 300, 150, 90), // smallest, slowest to start and run
  row("mid-worse", "wasm", 3 * MB, 400, 300, 70), // beaten by mid on both panels
  row("mid", "wasm", 1.5 * MB, 120, 70, 65, { form: "ort" }), // a form is a file of its own
  row("big", "wasm-1t", 8 * MB, 210, 150, 80),
  row("big", "webgpu", 8 * MB, 900, 800, 3000, { status: "error" }), // not measured: no series
  row("big", "wasm", 8 * MB, 1, 1, 1, { model: "other" }),
];

test("series: per measured runtime, every file of the model sorted by size, cold = download + create + first run", () => {
  const series = frontierSeries("m", ROWS, { variants: { big: { label: "the original" } } }, { mbps: 8 });
  assert.deepEqual(
    series.map((s) => s.key),
    ["wasm-1t", "wasm"],
  ); // one thread, all threads; the failed webgpu row left out
  const wasm = series[1].points;
  assert.deepEqual(
    wasm.map((p) => p.name),
    ["small-slow", "mid (ort form)", "mid", "mid-worse", "the original"],
  );
  const small = wasm[0];
  assert.equal(small.download, (MB * 8) / 8000); // 1 MB at 8 Mbit/s
  assert.equal(small.cold, small.download + 300 + 150);
  assert.equal(small.warm, 90);
  assert.deepEqual(
    wasm.map((p) => p.warmFrontier),
    [true, true, true, false, true],
  );
  // At 8 Mbit/s a MB costs 1049 ms, more than any session saves: the smallest file alone starts soonest.
  assert.deepEqual(
    wasm.map((p) => p.coldFrontier),
    [true, false, false, false, false],
  );
  // At 10 Gbit/s the download is next to nothing: the ort form starts sooner than every larger file.
  const fast = frontierSeries("m", ROWS, null, { mbps: 10_000 })[1].points;
  assert.deepEqual(
    fast.map((p) => [p.name, p.coldFrontier]),
    [
      ["small-slow", true],
      ["mid (ort form)", true],
      ["mid", false],
      ["mid-worse", false],
      ["big", false],
    ],
  );
});

test("config: a scatter with the cold panel above the warm one, log axes, the bandwidth stated, frontier lines apart", () => {
  const config = frontierConfig("m", ROWS, null, { mbps: 25 });
  assert.equal(config.type, "scatter");
  const { x, yCold, yWarm } = config.options.scales;
  assert.equal(x.title.text, "file size, MB");
  assert.equal(yCold.type, "logarithmic");
  assert.equal(yWarm.type, "logarithmic");
  assert.equal(yCold.stack, yWarm.stack);
  // Chart.js stacks one stack's axes from the bottom up in the order given (seen in Chromium: tests/bench/).
  assert.deepEqual(Object.keys(config.options.scales), ["x", "yWarm", "yCold"]);
  assert.match(yCold.title.text, /25 Mbit\/s/);
  assert.match(config.options.plugins.title.text, /download at 25 Mbit\/s/);
  assert.deepEqual(
    config.data.datasets.map((d) => d.label),
    [
      "wasm-1t cold start",
      "wasm-1t cold start frontier",
      "wasm-1t warm run",
      "wasm-1t warm run frontier",
      "wasm cold start",
      "wasm cold start frontier",
      "wasm warm run",
      "wasm warm run frontier",
    ],
  );
  const warm = config.data.datasets.find((d) => d.label === "wasm warm run");
  assert.equal(warm.yAxisID, "yWarm");
  assert.deepEqual(
    warm.data.map((p) => [p.x, p.y]),
    [
      [1, 90],
      [1.5, 65],
      [2, 60],
      [3, 70],
      [8, 40],
    ],
  );
  const line = config.data.datasets.find((d) => d.label === "wasm warm run frontier");
  assert.equal(line.showLine, true);
  assert.deepEqual(
    line.data.map((p) => p.y),
    [90, 65, 60, 40],
  );
  // Frontier points filled, the rest hollow; the lines have no legend entry and no tooltip.
  assert.equal(warm.backgroundColor[3], "#ffffff");
  assert.equal(warm.backgroundColor[0], warm.borderColor);
  const { legend, tooltip } = config.options.plugins;
  assert.equal(legend.labels.filter({ datasetIndex: 1 }, config.data), false);
  assert.equal(legend.labels.filter({ datasetIndex: 0 }, config.data), true);
  assert.equal(tooltip.filter({ dataset: line }), false);
  const cold = config.data.datasets.find((d) => d.label === "wasm cold start");
  const text = tooltip.callbacks.label({ dataset: cold, raw: cold.data[0] });
  assert.equal(text, "wasm cold start: 786 ms = download 336 + create 300 + first run 150 ms; 1 MB, on the frontier");
  assert.equal(tooltip.callbacks.title([{ raw: cold.data[1] }]), "m mid (ort form)");
});

test("config without browser rows: no datasets", () => {
  assert.deepEqual(frontierConfig("m", []).data.datasets, []);
});
