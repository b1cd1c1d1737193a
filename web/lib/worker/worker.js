// A Web Worker that owns the onnxruntime-web sessions of one runtime, so long runs
// never block the page. Messages: {id, op, ...args} -> {id, ok, result | error}.
import { logRouter } from "./ort-log.js";
import * as runtime from "./ort-runtime.js";

const operations = {
  init: ({ runtime: name, bundle, threads, verbose, ortBase, perturb }) =>
    runtime.init(name, { bundle, threads, verbose, ortBase, perturb }),
  create: ({ bytes, verbose, profile }) => runtime.createSession(bytes, { verbose, profile }),
  endProfiling: ({ session }) => runtime.endProfiling(session),
  run: ({ session, feeds }) => runtime.run(session, feeds),
  release: ({ session }) => runtime.release(session),
};

// onnxruntime-web reports node placement and fallbacks through the console; keep a copy
// so the page (and the conformance check) can show where nodes actually ran. The console itself gets
// onnxruntime's warnings and errors one line each, never its verbose records or shader source (ort-log.js).
const logs = [];
const route = logRouter();
const originals = Object.fromEntries(
  ["log", "info", "warn", "error"].map((level) => [level, console[level].bind(console)]),
);
for (const level of Object.keys(originals)) {
  console[level] = (...args) => {
    logs.push(`${level}: ${args.map(String).join(" ")}`);
    if (logs.length > 20000) logs.shift();
    const text = String(args[0] ?? "");
    const to = route(level, text);
    // onnxruntime colours its lines for a terminal (ESC[0;93m ... ESC[m): a console shows them bare.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is the character to strip
    if (to) originals[to](...(args.length === 1 ? [text.replace(/\x1b\[[0-9;]*m/g, "")] : args));
  };
}
operations.logs = () => logs.splice(0, logs.length);

self.onmessage = async ({ data }) => {
  const { id, op, ...args } = data;
  try {
    const result = await operations[op](args);
    const transfer = [];
    for (const output of Object.values(result?.outputs ?? {})) {
      if (output.data?.buffer instanceof ArrayBuffer) transfer.push(output.data.buffer);
    }
    self.postMessage({ id, ok: true, result }, transfer);
  } catch (error) {
    self.postMessage({ id, ok: false, error: error?.message ?? String(error) });
  }
};
