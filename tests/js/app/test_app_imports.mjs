// The public API is the boundary: onnxport's pages (web/app) import the library through index.js
// (the public API) and internal.js (the one documented entry for our own pages) only; the examples,
// which users copy, through index.js alone (node --test).
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const WEB = resolve(dirname(fileURLToPath(import.meta.url)), "../../../web");
const LIB = join(WEB, "lib");

// Every module specifier of a file: static imports and re-exports, and import("...") with a literal.
function specifiers(source) {
  const found = [];
  for (const match of source.matchAll(
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm,
  )) {
    found.push(match[1] ?? match[2] ?? match[3]);
  }
  return found;
}

// [file, the lib module it imports] for each import of a web/lib module outside `allowed`.
function libImports(folder, allowed, ext = /\.(js|html)$/) {
  const bad = [];
  for (const name of readdirSync(folder, { recursive: true }).filter((f) => ext.test(f))) {
    const file = join(folder, name);
    for (const spec of specifiers(readFileSync(file, "utf8"))) {
      if (!spec.startsWith(".")) continue; // bare names come from the import map
      const target = resolve(dirname(file), spec);
      if (dirname(target) === LIB && !allowed.includes(relative(LIB, target)))
        bad.push([relative(WEB, file), relative(WEB, target)]);
    }
  }
  return bad;
}

test("the import scanner sees static, multi-line and dynamic imports", () => {
  const source =
    'import { a } from "../lib/a.js";\nimport {\n  b,\n} from "../lib/b.js";\nexport { c } from "./c.js";\nimport "./d.js";\nawait import("./e.js");';
  assert.deepEqual(specifiers(source), ["../lib/a.js", "../lib/b.js", "./c.js", "./d.js", "./e.js"]);
});

test("web/app imports the library through index.js and internal.js only", () => {
  assert.deepEqual(libImports(join(WEB, "app"), ["index.js", "internal.js"]), []);
});

test("the examples use the public API alone", () => {
  assert.deepEqual(libImports(join(WEB, "examples"), ["index.js"]), []);
});

test("internal.js says it is not a stable API", () => {
  assert.match(readFileSync(join(LIB, "internal.js"), "utf8"), /NOT a stable API/);
});
