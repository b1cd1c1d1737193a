// `node web/lib/bundle.mjs`: writes dist/onnxport.js, the library as one minified module, for pages that import it
// from an onnxport server. index.js's module graph is 34 files eight imports deep, fetched one level at a time, which
// a cold page pays for on every start; one file cuts that wait (docs/guide/browser-library.md has the figures). The worker
// stays its own three files: dist/ is as deep under web/lib as the library's folders, so the worker's URL
// ("../worker/worker.js") and the server's ("../../../") resolve from the bundle as they do from the sources.
// dist/onnxport.js is committed, so the server and the wheel need no Node; tests/js/lib/test_bundle.mjs fails when it
// is not what this script writes from the sources.
import { rolldown } from "rolldown";
import { writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const LIB = dirname(fileURLToPath(import.meta.url));
export const BUNDLE = join(LIB, "dist", "onnxport.js");
const BANNER =
  "// onnxport-web, bundled from web/lib/index.js by web/lib/bundle.mjs: edit the sources, then run it again.";

/** The bundle's text, made from the sources now. */
export async function bundle() {
  const build = await rolldown({ input: join(LIB, "index.js"), platform: "browser", logLevel: "warn" });
  try {
    const { output } = await build.generate({ format: "esm", minify: true, postBanner: BANNER });
    if (output.length !== 1)
      throw new Error(`expected one file from the bundler, got ${output.map((o) => o.fileName)}`);
    return output[0].code;
  } finally {
    await build.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const code = await bundle();
  mkdirSync(dirname(BUNDLE), { recursive: true });
  writeFileSync(BUNDLE, code);
  console.log(`${BUNDLE}: ${code.length.toLocaleString("en")} bytes`);
}
