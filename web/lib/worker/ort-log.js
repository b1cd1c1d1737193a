// onnxruntime's native log as a worker's console receives it. Its WebAssembly build writes stderr with one
// console.error call per line, so a record of several lines arrives as one tagged line ("[V:onnxruntime:,
// program_manager.cc:12 Build] ...") and then untagged ones: the WebGPU execution provider's shader source,
// a stack. Every line of every severity went to the console as an error before, shader source included.
// route(level, text) says where a line goes besides the worker's buffer (worker.js keeps every line): the
// console method for onnxruntime's warnings and errors, one line per record at its own severity, and null
// for everything else of onnxruntime's (verbose and info records, continuation lines). Other code's
// warnings and errors pass unchanged.
const TAG = /\[([VIWEF]):onnxruntime/;
const CONSOLE = Object.freeze({ V: null, I: null, W: "warn", E: "error", F: "error" });

/** @returns {(level: string, text: string) => "warn" | "error" | null} */
export function logRouter() {
  let record = null; // the severity of the onnxruntime record the last stderr line belonged to
  return (level, text) => {
    const tag = TAG.exec(text);
    if (tag) {
      record = tag[1];
      return CONSOLE[record];
    }
    if (level === "error" && record) return null; // the record's next line
    record = null;
    return level === "warn" || level === "error" ? level : null;
  };
}
