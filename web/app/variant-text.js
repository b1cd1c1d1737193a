// How a variant is said on the models and model pages: its precision from what its file stores, its status
// with a one-line reason (the whole reason on demand), and whether 4 bits gained anything over 8.
import { bytes, el } from "./ui.js";

const SHORT_REASON = 90; // characters of a reason a cell shows; the rest is one click (or a hover) away
// A 4-bit file must be at least this much smaller than the 8-bit weights file for its 4 bits to count.
const INT4_MIN_GAIN = 0.1;

// The precision of a variant's file, read off the manifest: "int4" when it holds weights in 4-bit blocks
// (settings.weights_4bit), else what it computes (`arithmetic`: "original (int8)" computes int8). A variant with no
// file (skipped, or failed) has none: its `precision` is only the budget it would have been judged by (int8 for int4).
export function precisionText(v) {
  if (v.settings?.weights_4bit > 0) return "int4";
  return v.file ? (v.arithmetic ?? v.precision) : "-";
}

// onnxruntime's "[ONNXRuntimeError] : 10 : INVALID_GRAPH : " said as words, before the first clause is taken.
const RUNTIME_ERROR = /\[ONNXRuntimeError\] : \d+ : (\w+) : /g;

// A reason's first clause on one line, without the "model variant: " its writer put first, at most
// SHORT_REASON characters. Clauses end at ": " or "; " outside brackets: "nothing to quantize: no operator ...
// (dynamic int8: Attention, ...)" is "nothing to quantize".
export function shortReason(text, prefix = "") {
  let line = String(text ?? "")
    .trim()
    .split("\n")[0]
    .replace(RUNTIME_ERROR, "onnxruntime $1: ");
  if (prefix && line.startsWith(prefix)) line = line.slice(prefix.length);
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "(" || c === "[") depth++;
    else if ((c === ")" || c === "]") && depth > 0) depth--;
    else if (depth === 0 && (c === ":" || c === ";") && line[i + 1] === " " && i > 0) {
      line = line.slice(0, i);
      break;
    }
  }
  if (line.length <= SHORT_REASON) return line;
  const cut = line.lastIndexOf(" ", SHORT_REASON - 1);
  return `${line.slice(0, cut > SHORT_REASON / 2 ? cut : SHORT_REASON - 1)}…`;
}

// A reason as a cell or a line shows it: the short one; when that is not the whole reason, a <details> whose
// summary is the short one (the whole text also on hover) and whose body is the whole text (`whole`: the reason
// and whatever else explains it).
export function reasonView(lead, reason, prefix = "", tail = "", whole = reason) {
  if (!reason) return el("span", { class: "reason", text: `${lead}${tail}` });
  const short = shortReason(reason, prefix);
  const head = `${lead}${short}${tail}`;
  if (short === String(whole).trim()) return el("span", { class: "reason", text: head });
  return el(
    "details",
    { class: "reason", title: whole },
    el("summary", { text: head }),
    el("p", { class: "reason-full", "data-testid": "reason-full", text: whole }),
  );
}

// A variant's whole reason: its one line and, when the runtime refused it, the runtime's whole message (`detail`).
export const wholeReason = (v) => (v.detail ? `${v.reason}\nonnxruntime said: ${v.detail}` : v.reason);

// A variant's status cell: "ok", or "skipped: nothing to quantize" with the whole reason on demand.
export function statusView(model, name, v) {
  const synthetic = v.judged_on === "synthetic" ? " (judged on synthetic inputs)" : "";
  if (!v.reason) return el("span", { class: "status", text: `${v.status}${synthetic}` });
  return reasonView(`${v.status}: `, v.reason, `${model.name} ${name}: `, synthetic, wholeReason(v));
}

// When the 4-bit file is not meaningfully smaller than the 8-bit weights file, the sentence that says so (else null):
// both sizes, and what each stores, from the manifest's settings.
export function int4Note(model) {
  const four = model.variants?.int4;
  const eight = model.variants?.["int8-weights"];
  if (!four?.bytes || !eight?.bytes || four.bytes < eight.bytes * (1 - INT4_MIN_GAIN)) return null;
  const gain = 1 - four.bytes / eight.bytes;
  const size =
    gain > 0
      ? `only ${(gain * 100).toFixed(1)}% smaller than`
      : gain < 0
        ? `${(-gain * 100).toFixed(1)}% larger than`
        : "the size of";
  const held =
    four.settings?.weights_4bit !== undefined
      ? ` Its 4-bit blocks hold ${count(four.settings.weights_4bit, "weight")}; ${count((four.settings.weights_8bit ?? 0) + (four.settings.weights_stored ?? 0), "more weight")} stay in 8 bits.`
      : "";
  return el("p", {
    class: "note int4-note",
    "data-testid": "int4-note",
    text: `int4 (${bytes(four.bytes)}) is ${size} int8-weights (${bytes(eight.bytes)}): 4 bits gained nothing meaningful on this model.${held}`,
  });
}

const count = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;
