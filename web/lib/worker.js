// A Web Worker that owns the onnxruntime-web sessions of one runtime, so long runs
// never block the page. Messages: {id, op, ...args} -> {id, ok, result | error}.
import * as runtime from "./ort-runtime.js";

const operations = {
  init: ({ runtime: name, bundle, threads, verbose, ortBase, perturb }) => runtime.init(name, { bundle, threads, verbose, ortBase, perturb }),
  create: ({ bytes, verbose, profile }) => runtime.createSession(bytes, { verbose, profile }),
  endProfiling: ({ session }) => runtime.endProfiling(session),
  run: ({ session, feeds }) => runtime.run(session, feeds),
  release: ({ session }) => runtime.release(session),
};

// onnxruntime-web reports node placement and fallbacks through the console; keep a copy
// so the page (and the conformance check) can show where nodes actually ran.
const logs = [];
for (const level of ["log", "info", "warn", "error"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    logs.push(`${level}: ${args.map(String).join(" ")}`);
    if (logs.length > 20000) logs.shift();
    // onnxruntime's own verbose and info lines (it writes them to stderr) stay in the buffer.
    const text = String(args[0] ?? "");
    if (level !== "log" && level !== "info" && !/\[[VI]:onnxruntime/.test(text)) original(...args);
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
