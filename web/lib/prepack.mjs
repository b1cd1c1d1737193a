// `npm pack`'s prepack step: the package's type declarations (types/), written by TypeScript's tsc from the
// library's JSDoc. npm puts node_modules/.bin of this folder and of every folder above it on PATH, so in an
// onnxport checkout the tsc of the root's `npm ci` (the TypeScript release package.json pins) is found; no
// global tsc is needed. Without any tsc, one line says what to run instead of the shell's "tsc: not found".
import { spawnSync } from "node:child_process";

const ARGS = ["-p", ".", "--noEmit", "false", "--declaration", "--emitDeclarationOnly", "--outDir", "types"];
const MISSING =
  "onnxport-web: packing writes the package's type declarations with TypeScript's tsc, and none is " +
  "installed here: run `npm ci` at the root of the onnxport checkout (it installs the TypeScript release the " +
  "checkout pins), then `npm pack ./web/lib` again";

const done = spawnSync("tsc", ARGS, { stdio: "inherit", shell: process.platform === "win32" });
if (done.error && /** @type {NodeJS.ErrnoException} */ (done.error).code === "ENOENT") {
  console.error(MISSING);
  process.exit(1);
}
if (done.error) throw done.error;
process.exit(done.status ?? 1);
