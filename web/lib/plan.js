// The ordered plan of (runtime, variant) steps for a model on this device, ranked by the
// expected time to a first result: expected run time (speeds.js) plus the download when the
// artifact is not cached yet. Pairs known to give wrong answers here, and runtimes whose
// onnxruntime-web bundle has no kernel for one of the variant's operators (kernels.js), are left out, with why.
// Each step names the file too: the variant as built (form null) or a form (forms.js).
import { served } from "./manifest.js";
import { chooseForm, fileRecord } from "./forms.js";
import { missingKernelReason } from "./kernels.js";
import { inBrowser, PINNABLE, placed, runtime as runtimeRow, unavailableReason } from "./runtimes.js";
import { bandwidth, expectedRun, formatMs } from "./speeds.js";
import { checkedFailure, remembered } from "./verdicts.js";

// The server's onnxruntime: always available, the plan's last step.
const SERVER = PINNABLE.find((key) => !inBrowser(key));

// context: {pin: {runtime, variant, form}, bench, conformance, cached: Set of URLs, fileUrl(file),
// verify: "first-use" | "always" | "off", ortVersion}
export function buildPlan(model, device, context) {
  const { pin = {} } = context;
  const ok = served(model);
  const steps = [];
  const skipped = [];
  if (pin.runtime && !PINNABLE.includes(pin.runtime)) throw new Error(`unknown runtime ${JSON.stringify(pin.runtime)}; runtimes: ${PINNABLE.join(", ")}`);
  if (pin.variant && !ok.includes(pin.variant)) {
    throw new Error(`variant ${JSON.stringify(pin.variant)} of ${model.name} is not served; served: ${ok.join(", ") || "none"}`);
  }
  if (pin.form) {
    if (!pin.variant) throw new Error(`a form is a file of one variant: pin the variant too (form ${JSON.stringify(pin.form)})`);
    fileRecord(model.variants[pin.variant], pin.form); // throws, naming the served forms, when it is not one
  }
  const variants = pin.variant ? [pin.variant] : ok;
  for (const runtime of PINNABLE.filter((r) => r !== SERVER)) {
    if (pin.runtime && pin.runtime !== runtime) {
      skipped.push({ runtime, reason: `runtime pinned to ${pin.runtime}` });
      continue;
    }
    const unavailable = unavailableReason(runtime, device);
    if (unavailable) {
      skipped.push({ runtime, reason: unavailable });
      continue;
    }
    for (const variant of variants) {
      const step = candidate(model, variant, runtime, device, context);
      if (step.skip) skipped.push({ runtime, variant, reason: step.skip });
      else steps.push(step);
    }
  }
  // A software adapter is correct but slow: it goes after WebAssembly until measured faster.
  steps.sort((a, b) => Number(a.late) - Number(b.late) || a.expectedMs - b.expectedMs);
  if (!pin.runtime || pin.runtime === SERVER) {
    const variant = pin.variant || (ok.includes("fp32") ? "fp32" : ok[0]);
    if (variant) steps.push({ runtime: SERVER, key: SERVER, variant, form: null, why: "the server's onnxruntime: the reference, always available" });
  }
  return { steps, skipped };
}

function candidate(model, variant, runtime, device, context) {
  const record = model.variants[variant];
  const row = runtimeRow(runtime);
  const { key, threads } = placed(runtime, device); // key: the tolerance and check name
  // Before any download: a session with an operator its bundle has no kernel for cannot be created.
  const noKernel = missingKernelReason(runtime, record.operator_types);
  if (noKernel) return { skip: noKernel };
  if (record.precision === "fp16" && row.shaderF16 && !device.shaderF16) {
    return { skip: "fp16 needs the adapter feature shader-f16, which this adapter lacks" };
  }
  const checked = checkedFailure(context.conformance, record.sha256, key, device);
  if (checked) return { skip: `onnxport check on this kind of device found it ${checked.status === "fail" ? "wrong" : "unsupported"}: ${checked.reason}` };
  if (context.verify !== "always") {
    const known = remembered(record.sha256, key, context.ortVersion, device);
    if (known && !known.ok) return { skip: `${known.reason} (verified ${known.at.slice(0, 10)}; not tried again)` };
  }
  const { form, why: formWhy } = context.pin?.form
    ? { form: context.pin.form, why: `${context.pin.form} form pinned` }
    : chooseForm(record, key, device, context);
  const file = fileRecord(record, form);
  const run = expectedRun({ model, variant, record: file, runtime: key, device, bench: context.bench });
  const cached = context.cached?.has(context.fileUrl(file.file));
  const net = bandwidth();
  const downloadMs = cached ? 0 : file.bytes / net.bytesPerMs;
  const late = Boolean(row.software) && Boolean(device.adapter?.fallback) && !run.measured;
  const why = [
    `${formatMs(run.ms)} per run (${run.source})`,
    cached ? "cached" : `${formatMs(downloadMs)} to download ${(file.bytes / 1024 ** 2).toFixed(1)} MB (${net.source})`,
    ...(formWhy ? [formWhy] : []),
    ...(late ? [row.software.note] : []),
  ].join(" + ");
  return { runtime, key, variant, form, threads, expectedMs: run.ms + downloadMs, runMs: run.ms, downloadMs, measured: run.measured, late, why };
}
