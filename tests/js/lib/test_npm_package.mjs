// What keeps web/lib a package a bundler can take as it is (the slow proof, a Vite build run in
// Chromium, is tests/npm/test_npm_vite.py): every import is relative, so a bundler pulls in nothing
// else; the only `new URL("…", import.meta.url)` is the worker's, inside `new Worker(...)`, which Vite,
// webpack and Parcel bundle as a worker (any other such URL they copy as a file, unbundled); and the
// package README names every export of the public API (node --test).
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { test } from "node:test";

import * as api from "../../../web/lib/index.js";

const LIB = new URL("../../../web/lib/", import.meta.url);
// The package's modules: not types/ (written by prepack) nor dist/ (the one-file bundle for pages that import from a
// server, left out of the package: a bundler makes its own).
const modules = readdirSync(LIB, { recursive: true })
  .filter((name) => name.endsWith(".js") && !name.startsWith("types/") && !name.startsWith("dist/"))
  .sort();
const source = (name) => readFileSync(new URL(name, LIB), "utf8");

test("the library imports only its own modules (onnxruntime-web is imported by URL, from the server)", () => {
  const bare = [];
  for (const name of modules) {
    for (const [, spec] of source(name).matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm)) {
      if (!/^\.\.?\//.test(spec)) bare.push(`${name}: ${spec}`);
    }
    // import("./x.js") or import("../x/y.js") with a literal (a JSDoc type's too: same rule); ort-runtime.js's import(url) has none.
    for (const [, spec] of source(name).matchAll(/\bimport\(\s*["'`]([^"'`]+)["'`]\s*\)/g)) {
      if (!/^\.\.?\//.test(spec)) bare.push(`${name}: import(${spec})`);
    }
  }
  assert.deepEqual(bare, []);
});

test("the only new URL(literal, import.meta.url) is the worker's, in the form bundlers bundle", () => {
  const assetUrl = /\bnew\s+URL\s*\(\s*(['"`][^'"`]*['"`])\s*,\s*import\.meta\.url\s*\)/g;
  const workerUrl =
    /\bnew\s+Worker\s*\(\s*new\s+URL\s*\(\s*"\.\.\/worker\/worker\.js"\s*,\s*import\.meta\.url\s*\)\s*,\s*\{\s*type:\s*"module"/g;
  const found = modules.flatMap((name) => [...source(name).matchAll(assetUrl)].map((m) => `${name}: ${m[1]}`));
  assert.deepEqual(found, ['model/workers.js: "../worker/worker.js"']);
  assert.equal([...source("model/workers.js").matchAll(workerUrl)].length, 1);
});

test("the package README names every export of the public API", () => {
  const readme = source("README.md");
  const missing = Object.keys(api).filter((name) => !readme.includes(`\`${name}`));
  assert.deepEqual(missing, []);
});
