// The browser library's import contract, as lint-imports holds the Python package's layers: which web/lib
// module may import which. Read from each module's source: static imports, re-exports, side-effect imports
// and import("...") with a literal. Comments are left out, and with them JSDoc's type-only import("..."),
// which loads nothing (tsc checks those).
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const LIB = resolve(dirname(fileURLToPath(import.meta.url)), "../../../web/lib");

// The page's modules in layers, top to bottom. A module imports modules of its own group or of a layer below,
// never one above; groups that share a layer are independent and import nothing of each other. Each group is a
// folder of its name (the entry is web/lib's top: the URL pages import).
const LAYERS = [
  { entry: ["index.js", "internal.js", "types.js"] }, // the public API and its types, and the one entry of our own pages
  { client: ["client/client.js", "client/thread-trial.js", "client/report.js"] }, // connect() and load(): plan, download, verify, start a session
  {
    // a loaded model, its session (a worker's or the server's), the worker it talks to
    model: ["model/model.js", "model/session.js", "model/server-session.js", "model/workers.js"],
    // outputs against the reference, within tolerance, and the verdicts remembered
    verification: [
      "verification/verify.js",
      "verification/judgement.js",
      "verification/compare.js",
      "verification/reasons.js",
    ],
  },
  {
    // raw input to answer
    pipelines: ["pipelines/pipeline.js", "pipelines/text.js", "pipelines/image.js", "pipelines/answers.js"],
    choice: [
      "choice/plan.js",
      "choice/threads.js",
      "choice/paired-runs.js",
      "choice/cost.js",
      "choice/kernels.js",
      "choice/forms.js",
      "choice/artifact-verdicts.js",
      "choice/runtimes.js",
      "choice/probe.js",
      "choice/placement.js",
      "choice/fleet.js",
    ], // which runtime, variant and form, and why
  },
  // the manifest, the files it names, the API's documents
  { files: ["files/documents.js", "files/downloads.js", "files/manifest.js", "files/variants.js", "files/cors.js"] },
  { remembered: ["remembered/speeds.js", "remembered/store.js"] }, // what this browser measured, kept between visits
  { tensors: ["tensors/server-api.js", "tensors/npy.js", "tensors/tensors.js", "tensors/dtypes.js"] }, // tensors, their files and the wire
];
// The worker's modules run in the worker, which model/workers.js starts by URL: they import only each other (never
// the client, the plan or a session's page side), and no page module imports them, so onnxruntime-web is
// loaded in the worker alone.
const WORKER = ["worker/worker.js", "worker/ort-runtime.js", "worker/ort-log.js"];

/** The module specifiers `source` imports at run time. */
function specifiers(source) {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const found = [];
  const forms =
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm;
  for (const match of code.matchAll(forms)) found.push(match[1] ?? match[2] ?? match[3]);
  return found;
}

/** {module: [what it imports]} for web/lib's modules, as paths relative to web/lib (a bare name as written). */
function libGraph() {
  const graph = {};
  // dist/ holds the bundle web/lib/bundle.mjs makes of these modules (tests/js/lib/test_bundle.mjs holds it to them).
  const sources = readdirSync(LIB, { recursive: true }).filter((f) => f.endsWith(".js") && !f.startsWith("dist"));
  for (const name of sources.sort()) {
    const file = join(LIB, name);
    const targets = specifiers(readFileSync(file, "utf8")).map((spec) =>
      spec.startsWith(".") ? relative(LIB, resolve(dirname(file), spec)) : spec,
    );
    graph[name] = [...new Set(targets)].sort();
  }
  return graph;
}

/** Every way `graph` breaks the contract, one line each ([] when it keeps it). */
function violations(graph) {
  const place = {}; // module -> [layer index, group name]
  LAYERS.forEach((layer, index) => {
    for (const [group, modules] of Object.entries(layer)) for (const module of modules) place[module] = [index, group];
  });
  for (const module of WORKER) place[module] = [-1, "worker"];
  const found = [];
  const modules = Object.keys(graph).sort();
  for (const module of modules) {
    if (!place[module]) found.push(`${module} is in no group of the contract: place it in LAYERS or WORKER`);
  }
  for (const module of modules) {
    for (const target of graph[module]) {
      if (!(target in graph)) {
        found.push(`${module} imports ${target}: not a module of web/lib (the library is a package of its own)`);
        continue;
      }
      if (!place[module] || !place[target]) continue;
      const [[from, fromGroup], [to, toGroup]] = [place[module], place[target]];
      if (fromGroup === toGroup) continue;
      if ((fromGroup === "worker") !== (toGroup === "worker")) {
        found.push(
          `${module} (${fromGroup}) imports ${target} (${toGroup}): the worker's modules and the page's ` +
            "import nothing of each other",
        );
      } else if (from === to) {
        found.push(`${module} (${fromGroup}) imports ${target} (${toGroup}): groups of one layer are independent`);
      } else if (to < from) {
        found.push(`${module} (${fromGroup}) imports ${target} (${toGroup}): an import points down, never up`);
      }
    }
  }
  return [
    ...found,
    ...cycles(graph)
      .map((cycle) => `an import cycle: ${cycle.join(" -> ")}`)
      .sort(),
  ];
}

/** The import cycles of `graph`, each once, as [a, b, ..., a] from its first module by name. */
function cycles(graph) {
  const found = [];
  const state = {}; // module -> "open" while on the path, "done" after
  const path = [];
  const visit = (module) => {
    state[module] = "open";
    path.push(module);
    for (const target of graph[module] ?? []) {
      if (state[target] === "open") found.push(fromFirst(path.slice(path.indexOf(target))));
      else if (!state[target] && graph[target]) visit(target);
    }
    path.pop();
    state[module] = "done";
  };
  for (const module of Object.keys(graph).sort()) if (!state[module]) visit(module);
  return found;
}

function fromFirst(loop) {
  const start = loop.indexOf([...loop].sort()[0]);
  return [...loop.slice(start), ...loop.slice(0, start), loop[start]];
}

test("the scanner reads the forms that load a module, and skips comments and JSDoc types", () => {
  const source = [
    'import { a } from "./a.js";',
    "import {\n  b,\n} from './b.js';",
    'export { c } from "./c.js";',
    'import "./d.js";',
    'const e = await import("./e.js");',
    '/** @param {import("./type.js").T} t */',
    '// import { f } from "./commented.js";',
    "/* import g from './block.js'; */",
  ].join("\n");
  assert.deepEqual(specifiers(source), ["./a.js", "./b.js", "./c.js", "./d.js", "./e.js"]);
});

test("web/lib keeps its import contract", () => {
  assert.deepEqual(violations(libGraph()), []);
});

test("each group of the contract is the folder of its name", () => {
  const groups = [...LAYERS.flatMap((layer) => Object.entries(layer)), ["worker", WORKER]];
  const astray = groups.flatMap(([group, modules]) =>
    modules
      .filter((module) => dirname(module) !== (group === "entry" ? "." : group))
      .map((module) => `${module} (${group})`),
  );
  assert.deepEqual(astray, []);
});

test("a broken contract is named, one line per import", () => {
  // The contract's own modules, importing nothing, then imports that break it.
  const graph = Object.fromEntries(
    [...LAYERS.flatMap((layer) => Object.values(layer).flat()), ...WORKER].map((module) => [module, []]),
  );
  graph["worker/worker.js"] = ["worker/ort-runtime.js", "client/client.js"]; // the worker reaches for the page's client
  graph["tensors/tensors.js"] = ["tensors/dtypes.js", "../app/ui.js"]; // the library reaches into our pages
  graph["choice/plan.js"] = ["choice/cost.js", "pipelines/pipeline.js"]; // choice and pipelines share a layer
  graph["remembered/speeds.js"] = ["remembered/store.js"];
  graph["remembered/store.js"] = ["remembered/speeds.js"]; // a circle within a group
  graph["files/manifest.js"] = ["tensors/dtypes.js"];
  graph["tensors/dtypes.js"] = ["files/manifest.js"]; // up two layers, and a circle through them
  graph["fresh.js"] = [];
  assert.deepEqual(violations(graph), [
    "fresh.js is in no group of the contract: place it in LAYERS or WORKER",
    "choice/plan.js (choice) imports pipelines/pipeline.js (pipelines): groups of one layer are independent",
    "tensors/dtypes.js (tensors) imports files/manifest.js (files): an import points down, never up",
    "tensors/tensors.js imports ../app/ui.js: not a module of web/lib (the library is a package of its own)",
    "worker/worker.js (worker) imports client/client.js (client): the worker's modules and the page's import nothing of each other",
    "an import cycle: files/manifest.js -> tensors/dtypes.js -> files/manifest.js",
    "an import cycle: remembered/speeds.js -> remembered/store.js -> remembered/speeds.js",
  ]);
});
