// The fleet page's figures (web/app/fleet-view.js) from a GET /api/fleet document of the contract's shape (issue 36):
// the summary, the classes and their rows, each verdict in words, and the time charts' data and axes.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  boxes,
  byClass,
  checkFleet,
  fileName,
  metricText,
  NO_REPORTS,
  summary,
  tableRows,
  TABLE_HEADERS,
  timeConfig,
  timeText,
  verdictText,
  wantsLog,
} from "../../../web/app/fleet-view.js";

const SHA = (c) => c.repeat(64);
const T = (median, clients = 5) => ({
  median,
  p10: median * 0.8,
  p25: median * 0.9,
  p75: median * 1.1,
  p90: median * 1.3,
  clients,
});
const CHROME = {
  engine: "Chrome",
  engine_major: 131,
  adapter_vendor: "google",
  adapter_architecture: "swiftshader",
  software_adapter: true,
  cores: "2",
};
const WEBKIT = {
  engine: "WebKitGTK",
  engine_major: null,
  adapter_vendor: "none",
  adapter_architecture: "",
  software_adapter: false,
  cores: "3-4",
};
const CHROME_KEY = "Chrome 131 · 2 cores · google swiftshader (software)";
const WEBKIT_KEY = "WebKitGTK · 3-4 cores · no WebGPU";
const group = (fields) => ({
  sha256: SHA("a"),
  runtime: "wasm",
  model: "minilm",
  variant: "fp32",
  form: null,
  class: CHROME,
  class_key: CHROME_KEY,
  clients: 0,
  pass: 0,
  fail: 0,
  verdict: "few",
  metric: null,
  times: { create_ms: null, first_run_ms: null, warm_run_ms: null },
  ...fields,
});
const FLEET = {
  schema: 1,
  k: 3,
  fail_share: 0.667,
  generated: "2026-12-05T01:00:00Z",
  reports: 12345,
  groups: [
    group({ runtime: "webgpu", clients: 14, fail: 14, verdict: "fail", metric: { name: "cosine", median: 0.42 } }),
    group({
      runtime: "wasm",
      clients: 6,
      pass: 6,
      verdict: "pass",
      times: { create_ms: T(200, 6), first_run_ms: T(40, 6), warm_run_ms: T(30, 6) },
    }),
    group({
      runtime: "wasm-1t",
      variant: "int8-dynamic",
      form: "ort",
      sha256: SHA("b"),
      clients: 5,
      pass: 3,
      fail: 2,
      verdict: "mixed",
      metric: { name: "cosine", median: 0.9 },
      times: { create_ms: null, first_run_ms: null, warm_run_ms: T(60, 3) },
    }),
    group({
      model: "iris",
      sha256: SHA("c"),
      class: WEBKIT,
      class_key: WEBKIT_KEY,
      clients: 2,
      pass: 2,
      verdict: "few",
    }),
  ],
};

test("the summary counts reports, classes, models and verdicts", () => {
  const s = summary(FLEET);
  assert.deepEqual([s.reports, s.k, s.classes, s.models], [12345, 3, 2, 2]);
  assert.deepEqual(s.verdicts, { fail: 1, mixed: 1, pass: 1, few: 1 });
  assert.equal(
    s.text,
    "12,345 reports accepted · k = 3 (distinct devices a verdict or a time needs) · 2 device classes · 2 models" +
      " · verdicts: 1 fail, 1 mixed, 1 pass, 1 few",
  );
  const empty = summary({ ...FLEET, reports: 1, groups: [] });
  assert.equal(
    empty.text,
    "1 report accepted · k = 3 (distinct devices a verdict or a time needs) · 0 device classes · 0 models",
  );
});

test("groups fall into their classes by class_key, rows in model, variant, form, runtime order", () => {
  const classes = byClass(FLEET);
  assert.deepEqual(
    classes.map((c) => c.key),
    [CHROME_KEY, WEBKIT_KEY],
  );
  assert.deepEqual(
    classes[0].rows.map((g) => `${g.variant}/${g.runtime}`),
    ["fp32/wasm", "fp32/webgpu", "int8-dynamic/wasm-1t"],
  );
  assert.deepEqual(classes[0].class, CHROME);
  assert.equal(classes[0].clients, 14);
  assert.deepEqual(
    classes[1].rows.map((g) => g.model),
    ["iris"],
  );
});

test("each verdict in words, with its counts", () => {
  const [fail, pass, mixed, few] = FLEET.groups;
  assert.equal(verdictText(fail, 3), "failed on 14 of 14 devices");
  assert.equal(verdictText(pass, 3), "passed on 6 of 6 devices");
  assert.equal(verdictText(mixed, 3), "mixed: passed on 3, failed on 2 of 5 devices");
  assert.equal(verdictText(few, 3), "too few devices (2 of k=3)");
  assert.equal(verdictText(group({ clients: 1, pass: 1, verdict: "pass" }), 1), "passed on 1 of 1 device");
});

test("the failures' metric median, the times' medians, and '-' for what is missing (never null)", () => {
  const [fail, pass, mixed, few] = FLEET.groups;
  assert.equal(metricText(fail), "cosine 0.42");
  assert.equal(metricText(pass), "-");
  assert.equal(metricText(group({ metric: { name: "cosine", median: null } })), "-");
  assert.equal(timeText(pass), "30");
  assert.equal(timeText(pass, "create_ms"), "200");
  assert.equal(timeText(mixed, "create_ms"), "-");
  assert.equal(timeText(few), "-");
  assert.equal(timeText(group({ times: null })), "-");
});

test("a class's table: a row of every column per group, its verdict beside", () => {
  const rows = tableRows(byClass(FLEET)[0], 3, (_model, variant) => (variant === "fp32" ? "original" : variant));
  assert.ok(rows.every((r) => r.cells.length === TABLE_HEADERS.length));
  assert.deepEqual(
    rows.map((r) => r.verdict),
    ["pass", "fail", "mixed"],
  );
  assert.deepEqual(rows[1].cells, [
    "minilm",
    "original",
    "webgpu",
    "14",
    "0",
    "14",
    "failed on 14 of 14 devices",
    "cosine 0.42",
    "-",
  ]);
  assert.deepEqual(rows[2].cells.slice(0, 3), ["minilm", "int8-dynamic (ort form)", "wasm-1t"]);
  assert.ok(rows.flatMap((r) => r.cells).every((c) => typeof c === "string" && !/\b(null|undefined|NaN)\b/.test(c)));
  assert.equal(fileName(FLEET.groups[0]), "fp32");
});

test("the time chart: a box [p25, p75], a whisker [p10, p90] and the median per row that has the time", () => {
  const chrome = byClass(FLEET)[0];
  const config = timeConfig(chrome);
  assert.deepEqual(config.data.labels, ["minilm fp32 · wasm", "minilm int8-dynamic (ort form) · wasm-1t"]);
  const [box, whisker, median] = config.data.datasets;
  assert.deepEqual(
    box.data.map((d) => d.map(Math.round)),
    [
      [27, 33],
      [54, 66],
    ],
  );
  assert.deepEqual(
    whisker.data.map((d) => d.map(Math.round)),
    [
      [24, 39],
      [48, 78],
    ],
  );
  assert.deepEqual(median.data, [30, 60]);
  assert.equal(median.type, "line");
  assert.equal(median.showLine, false);
  assert.ok(box.grouped === false && whisker.grouped === false, "the box and whisker stand on one another");
  assert.equal(config.options.scales.y.type, "linear");
  assert.match(config.options.plugins.title.text, /warm run time/);
  const legend = config.options.plugins.legend.labels.generateLabels({ isDatasetVisible: (i) => i !== 1 });
  assert.deepEqual(
    legend.map((l) => [l.text, l.datasetIndex, l.hidden]),
    [
      ["p25 to p75 (box)", 0, false],
      ["p10 to p90 (whisker)", 1, true],
      ["median", 2, false],
    ],
  );
  const tooltip = config.options.plugins.tooltip.callbacks.label({ dataIndex: 0, datasetIndex: 2 });
  assert.equal(tooltip, "median 30 ms; p10 24, p25 27, p75 33, p90 39 ms; 6 devices that passed");

  const create = timeConfig(chrome, { which: "create_ms" });
  assert.deepEqual(create.data.labels, ["minilm fp32 · wasm"]);
  assert.match(create.options.plugins.title.text, /session creation time/);
  assert.equal(timeConfig(byClass(FLEET)[1]), null, "no row of the class has a time: no chart");
  assert.deepEqual(boxes(byClass(FLEET)[1]), []);
});

test("a log axis when the boxes span more than a factor of 30", () => {
  const wide = byClass({
    ...FLEET,
    groups: [
      group({ runtime: "wasm", verdict: "pass", times: { create_ms: null, first_run_ms: null, warm_run_ms: T(2) } }),
      group({
        runtime: "webgpu",
        verdict: "pass",
        times: { create_ms: null, first_run_ms: null, warm_run_ms: T(900) },
      }),
    ],
  })[0];
  assert.ok(wantsLog(boxes(wide)));
  const config = timeConfig(wide);
  assert.equal(config.options.scales.y.type, "logarithmic");
  assert.match(config.options.scales.y.title.text, /log scale/);
  assert.equal(config.options.scales.y.ticks.callback(200), "200");
  assert.equal(config.options.scales.y.ticks.callback(300), "");
  assert.equal(timeConfig(wide, { log: false }).options.scales.y.type, "linear");
  assert.ok(!wantsLog(boxes(byClass(FLEET)[0])));
});

test("the document is checked for its schema and groups; the empty state says what to do", () => {
  assert.equal(checkFleet(FLEET), FLEET);
  assert.throws(() => checkFleet({ ...FLEET, schema: 2 }), /schema 2, this page reads schema 1/);
  assert.throws(() => checkFleet({ schema: 1, k: 3 }), /"groups" to be a list/);
  assert.throws(() => checkFleet({ ...FLEET, k: null }), /"k" to be an integer, got null/);
  assert.throws(() => checkFleet(null), /expected a JSON object/);
  assert.match(NO_REPORTS, /connect\(server, \{ report: true \}\).*docs\/reference\/fleet\.md/);
});
