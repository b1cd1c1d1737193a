// The ordered plan of (runtime, variant) steps for a model on this device, with the
// reason for every runtime left out. Read from the manifest and the probe only.
import { served } from "./manifest.js";
import { threadsFor } from "./probe.js";

export const RUNTIMES = Object.freeze(["webgpu", "wasm", "server"]);

export function buildPlan(model, probe, pin = {}, speeds = null) {
  const ok = served(model);
  const steps = [];
  const skipped = [];
  const offer = (runtime, variant, why, extra = {}) => {
    if (pin.runtime && pin.runtime !== runtime) {
      skipped.push({ runtime, reason: `runtime pinned to ${pin.runtime}` });
    } else if (pin.variant && !ok.includes(pin.variant)) {
      skipped.push({ runtime, reason: `pinned variant ${pin.variant} is not served` });
    } else {
      steps.push({ runtime, variant: pin.variant || variant, why: pin.variant ? "variant pinned" : why, ...extra });
    }
  };

  if (!probe.webgpu) {
    skipped.push({ runtime: "webgpu", reason: probe.webgpuReason || "no WebGPU adapter" });
  } else if (probe.shaderF16 && ok.includes("fp16")) {
    offer("webgpu", "fp16", "the adapter has shader-f16");
  } else if (ok.includes("fp32")) {
    offer("webgpu", "fp32", probe.shaderF16 ? "no served fp16 variant" : "no shader-f16 on this adapter: fp32");
  } else {
    skipped.push({ runtime: "webgpu", reason: "no fp32 or fp16 variant is served" });
  }

  const fastest = fastestVariant(model, ok, speeds);
  if (fastest) {
    const threads = threadsFor(probe);
    offer("wasm", fastest.variant, fastest.why, { threads });
  } else {
    skipped.push({ runtime: "wasm", reason: "no variant is served" });
  }

  offer("server", ok.includes("fp32") ? "fp32" : ok[0], "the server's onnxruntime, always available");
  return { steps, skipped };
}

// Among served variants, the fastest measured: `speeds` is {variant: {ms, source}} (see
// speeds.js: this browser's runs, then the latest bench, then native speed at build time).
function fastestVariant(model, ok, speeds) {
  const measured = ok
    .map((variant) => ({ variant, ...(speeds?.[variant] ?? { ms: model.variants[variant].speed?.native_ms, source: "native onnxruntime at build time" }) }))
    .filter((m) => typeof m.ms === "number")
    .sort((a, b) => a.ms - b.ms);
  if (measured.length) {
    const best = measured[0];
    return { variant: best.variant, why: `fastest within budget: ${best.ms.toFixed(3)} ms (${best.source})` };
  }
  if (ok.includes("fp32")) return { variant: "fp32", why: "no speed measured: fp32" };
  return ok.length ? { variant: ok[0], why: "only served variant" } : null;
}
