// The performance page's Chart.js configurations: which series, which values, which axes, from a bench report.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  figure,
  latencyConfig,
  sizeConfig,
  startConfig,
  throughputConfig,
  throughputRows,
  variantLabel,
} from "../../../web/app/performance-charts.js";

const MB = 1024 ** 2;
const native = (one, all) => ({ 1: { median_ms: one }, all: { median_ms: all } });
const rows = (...rates) => rates.map(([clients, rps]) => ({ clients, requests_per_s: rps, p90_ms: 10 * clients }));
const BENCH = {
  models: {
    minilm: {
      variants: {
        fp32: { bytes: 88 * MB, native: native(36.1, 24.5) },
        "int8-dynamic": { bytes: 22 * MB, native: native(15.5, 9.3) },
      },
      server: {
        throughput_batching_off: rows([1, 36.7], [4, 38.4], [16, 42.9]),
        throughput_batching_on: rows([1, 35.0], [4, 37.0], [16, 40.0]),
        engines: [
          { engine: "ray", replicas: 1, batching: "off", throughput: rows([1, 30], [4, 33], [16, 35]) },
          { engine: "ray", replicas: 1, batching: "on", throughput: rows([1, 29], [4, 34], [16, 36]) },
          { engine: "ray", replicas: 2, batching: "off", throughput: rows([1, 31], [4, 45], [16, 50]) },
        ],
      },
    },
    iris: { variants: { fp32: { bytes: 3000, native: native(0.012, 0.011) } } },
  },
  browser: {
    results: [
      { model: "minilm", variant: "fp32", runtime: "wasm", status: "ok", warm: { median_ms: 80.5 } },
      { model: "minilm", variant: "int8-dynamic", runtime: "wasm-1t", status: "ok", warm: { median_ms: 110 } },
    ],
  },
};

test("latency: a bar per variant and measured runtime, in ms on a linear axis starting at zero", () => {
  const config = latencyConfig("minilm", BENCH.models.minilm, BENCH.browser.results);
  assert.equal(config.type, "bar");
  assert.deepEqual(config.data.labels, ["fp32", "int8-dynamic"]);
  assert.deepEqual(
    config.data.datasets.map((d) => d.label),
    ["native 1t", "native all", "wasm-1t", "wasm"],
  ); // no webgpu figures
  const series = Object.fromEntries(config.data.datasets.map((d) => [d.label, d.data]));
  assert.deepEqual(series["native all"], [24.5, 9.3]);
  assert.deepEqual(series.wasm, [80.5, null]);
  assert.deepEqual(series["wasm-1t"], [null, 110]);
  const { y, x } = config.options.scales;
  assert.equal(y.type, "linear");
  assert.equal(y.beginAtZero, true);
  assert.match(y.title.text, /ms/);
  assert.equal(x.title.text, "variant");
  assert.equal(config.options.animation, false);
  assert.equal(
    config.options.plugins.tooltip.callbacks.label({ dataset: { label: "native all" }, raw: 24.5 }),
    "native all: 24.5 ms",
  );
});

test("latency: the log view is a logarithmic axis that says so", () => {
  const { y } = latencyConfig("minilm", BENCH.models.minilm, [], { log: true }).options.scales;
  assert.equal(y.type, "logarithmic");
  assert.match(y.title.text, /log scale/);
  assert.equal(y.ticks.callback(0.01), "0.01");
  assert.equal(y.ticks.callback(50), "50");
  assert.equal(y.ticks.callback(30), ""); // 1, 2 and 5 of each decade are labelled
});

test("throughput: waitress off/on, then one line per Ray Serve row, requests/s against clients", () => {
  const server = BENCH.models.minilm.server;
  assert.equal(throughputRows(server).length, 5);
  const config = throughputConfig("minilm", server);
  assert.equal(config.type, "line");
  assert.deepEqual(config.data.labels, ["1", "4", "16"]);
  assert.deepEqual(
    config.data.datasets.map((d) => d.label),
    [
      "waitress, batching off",
      "waitress, batching on",
      "Ray Serve 1 replica, batching off",
      "Ray Serve 1 replica, batching on",
      "Ray Serve 2 replicas, batching off",
    ],
  );
  assert.deepEqual(config.data.datasets[4].data, [31, 45, 50]);
  const [off, on, rayOff, rayOn, ray2] = config.data.datasets;
  assert.equal(off.borderColor, on.borderColor); // same engine and replicas: same colour, batching on dashed
  assert.deepEqual(off.borderDash, []);
  assert.notDeepEqual(on.borderDash, []);
  assert.equal(rayOff.borderColor, rayOn.borderColor);
  assert.notEqual(rayOff.borderColor, off.borderColor);
  assert.notEqual(ray2.borderColor, rayOff.borderColor);
  assert.equal(config.options.scales.y.type, "linear");
  assert.equal(config.options.scales.x.title.text, "concurrent clients");
  const label = config.options.plugins.tooltip.callbacks.label({
    dataset: ray2,
    raw: 45,
    datasetIndex: 4,
    dataIndex: 1,
  });
  assert.equal(label, "Ray Serve 2 replicas, batching off: 45 req/s, p90 40 ms");
});

test("throughput without engines: the two waitress lines", () => {
  const { throughput_batching_off, throughput_batching_on } = BENCH.models.minilm.server;
  const config = throughputConfig("minilm", { throughput_batching_off, throughput_batching_on });
  assert.equal(config.data.datasets.length, 2);
});

test("size: MB on a linear axis, a series per variant, missing variants empty; relative to fp32 on request", () => {
  const config = sizeConfig(BENCH);
  assert.deepEqual(config.data.labels, ["minilm", "iris"]);
  const series = Object.fromEntries(config.data.datasets.map((d) => [d.label, d.data]));
  assert.deepEqual(series.fp32, [88, 3000 / MB]);
  assert.deepEqual(series["int8-dynamic"], [22, null]);
  assert.equal(config.options.scales.y.type, "linear");
  assert.equal(config.options.scales.y.title.text, "size, MB");
  const tooltip = config.options.plugins.tooltip.callbacks.label;
  assert.equal(
    tooltip({ dataset: { label: "int8-dynamic" }, dataIndex: 0, raw: 22 }),
    "int8-dynamic: 22 MB (0.25x fp32)",
  );
  const relative = sizeConfig(BENCH, { relative: true });
  assert.deepEqual(relative.data.datasets.find((d) => d.label === "int8-dynamic").data, [0.25, null]);
  assert.equal(relative.options.scales.y.type, "linear");
});

test("figures: three significant digits, no grouping", () => {
  assert.equal(figure(0.012345), "0.0123");
  assert.equal(figure(1234.5), "1230");
  assert.equal(figure(null), "-");
});

test("start by file: per variant, a stack per file (as built, each form) of session creation and first run", () => {
  const start = (form, create, first) => ({
    model: "minilm",
    variant: "fp32",
    form,
    runtime: "wasm",
    status: "ok",
    cached: { create_ms: create, first_run_ms: first, total_ms: create + first + 200, load_ms: 150, init_ms: 190 },
    warm: { median_ms: 70 },
  });
  const results = [start(null, 248, 84), start("ort", 150, 76), { ...start("basic", 1, 1), runtime: "wasm-1t" }];
  const config = startConfig("minilm", results);
  assert.deepEqual(config.data.labels, ["fp32"]);
  assert.deepEqual(
    config.data.datasets.map((d) => [d.label, d.stack, d.data]),
    [
      ["as built: create", "as built", [248]],
      ["as built: first run", "as built", [84]],
      ["ort: create", "ort", [150]],
      ["ort: first run", "ort", [76]],
    ],
  );
  assert.equal(config.options.scales.x.stacked, true);
  assert.equal(config.options.scales.y.stacked, true);
  const label = config.options.plugins.tooltip.callbacks.label({
    dataset: config.data.datasets[2],
    dataIndex: 0,
    raw: 150,
  });
  assert.equal(label, "ort: create: 150 ms (start 426 ms, load 150 ms beside runtime start 190 ms; warm 70 ms)");
});

test("an already-int8 model's fp32 is named by its label (bench.json's), its key kept for the figures", () => {
  const data = {
    variants: { fp32: { label: "original (int8)", bytes: 26000, native: native(0.02, 0.014) } },
    server: BENCH.models.minilm.server,
  };
  const rows = [
    {
      model: "voice",
      variant: "fp32",
      runtime: "wasm",
      status: "ok",
      warm: { median_ms: 0.2 },
      cached: { create_ms: 2, first_run_ms: 1, total_ms: 400, load_ms: 5, init_ms: 390 },
    },
  ];
  const latency = latencyConfig("voice", data, rows);
  assert.deepEqual(latency.data.labels, ["original (int8)"]);
  assert.deepEqual(latency.data.datasets.find((d) => d.label === "wasm").data, [0.2]);
  assert.equal(
    latency.options.plugins.tooltip.callbacks.title([{ label: latency.data.labels[0] }]),
    "voice original (int8)",
  );
  assert.deepEqual(startConfig("voice", rows, data).data.labels, ["original (int8)"]);
  assert.match(
    throughputConfig("voice", data.server, variantLabel(data, "fp32")).options.plugins.title.text,
    /\(original \(int8\), batch-1/,
  );
  const size = sizeConfig({ models: { voice: data, iris: BENCH.models.iris } });
  assert.deepEqual(
    size.data.datasets.map((d) => d.label),
    ["fp32"],
  ); // a series per key, across models
  const tooltip = size.options.plugins.tooltip.callbacks.label;
  assert.equal(
    tooltip({ dataset: { label: "fp32" }, dataIndex: 0 }),
    `original (int8): ${figure(26000 / MB)} MB (1x original (int8))`,
  );
  assert.equal(tooltip({ dataset: { label: "fp32" }, dataIndex: 1 }), `fp32: ${figure(3000 / MB)} MB (1x fp32)`);
  assert.deepEqual(latencyConfig("iris", BENCH.models.iris).data.labels, ["fp32"]); // no label: the key, as before
});
