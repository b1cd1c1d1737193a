// The ordered plan of steps for a model on this device: each a runtime, a variant and the file to
// load (the variant as built, form null, or a form: forms.js), ranked by cost.js's rule (what the page will
// pay: the download when the file is not cached, the session's creation and the expected runs x the warm run;
// a software adapter late), each step's why ending with the terms that put it before the next. Pairs known to
// give wrong answers here (by this browser, by `onnxport check` or by the fleet of this device class),
// and runtimes whose onnxruntime-web bundle has no kernel for one of the variant's operators (kernels.js), are left out, with why, unless one of the variant's forms has
// them all (`gemm`: tree ensembles as tensor operators, which WebGPU runs): then the step is that form
// alone. A form's step is followed by its variant as built, tried when the form fails (not where the
// variant as built cannot run): load() tries the steps in order, nothing else.
import { served } from "../files/manifest.js";
import { formatMs } from "../remembered/speeds.js";
import { alike, byCost, cost, decision, expectedRuns, MIN_GAIN, startsSooner } from "./cost.js";
import { fleetFailure } from "./fleet.js";
import { AS_BUILT, fileRecord, formOperatorTypes, servedForms } from "./forms.js";
import { missingKernelReason } from "./kernels.js";
import { inBrowser, PINNABLE, shaderF16Reason, unavailableReason } from "./runtimes.js";
import { threadChoice } from "./threads.js";
import { checkedFailure, checkedVerdicts, remembered } from "./artifact-verdicts.js";

// The server's onnxruntime: always available, the plan's last step.
const SERVER = PINNABLE.find((key) => !inBrowser(key));

// context: {pin: {runtime, variant, form}, bench, conformance, fleet (the server's api/fleet), cached: Set of URLs, fileUrl(file),
// verify: "first-use" | "always" | "off", ortVersion, expectedRuns (cost.js; the default when absent)}
export function buildPlan(model, device, context) {
  const { pin = {} } = context;
  expectedRuns(context.expectedRuns); // throws, naming the option, before anything is ranked
  const ok = served(model);
  const steps = [];
  const skipped = [];
  if (pin.runtime && !PINNABLE.includes(pin.runtime))
    throw new Error(`unknown runtime ${JSON.stringify(pin.runtime)}; runtimes: ${PINNABLE.join(", ")}`);
  if (pin.variant && !ok.includes(pin.variant)) {
    throw new Error(
      `variant ${JSON.stringify(pin.variant)} of ${model.name} is not served; served: ${ok.join(", ") || "none"}`,
    );
  }
  if (pin.form) {
    if (!pin.variant)
      throw new Error(`a form is a file of one variant: pin the variant too (form ${JSON.stringify(pin.form)})`);
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
  alike(steps.map((step) => step.cost)).forEach((c, i) => priced(steps[i], c));
  steps.sort(byCost);
  steps.forEach((step, i) => {
    const said = rivals(steps, i)
      .map((rival) => decision(step.cost, rival.cost, stepName(rival, step)))
      .filter(Boolean);
    if (said.length) step.why = [step.why, ...said].join("; ");
  });
  for (const step of steps) for (const part of ["cost", "file", "formWhy"]) delete step[part];
  if (!pin.runtime || pin.runtime === SERVER) {
    const variant = pin.variant || (ok.includes("fp32") ? "fp32" : ok[0]);
    if (variant)
      steps.push({
        runtime: SERVER,
        key: SERVER,
        variant,
        form: null,
        why: "the server's onnxruntime: the reference, always available",
      });
  }
  // A form that fails here is followed by its variant as built, before the plan's next step.
  const tried = steps.flatMap((step) =>
    step.form === AS_BUILT || step.formOnly
      ? [step]
      : [step, { ...step, form: AS_BUILT, why: `as built, if the ${step.form} form fails: ${step.why}` }],
  );
  return { steps: tried, skipped };
}

function candidate(model, variant, runtime, device, context) {
  const record = model.variants[variant];
  // key: the tolerance and check name; on WebAssembly, the thread count measured to pay (threads.js)
  const threading = threadChoice(runtime, record, device, {
    bench: context.bench,
    fleet: context.fleet,
    model,
    variant,
    // Evidence kept per thread count (onnxport check, the fleet); this browser's own verdict is the runtime's: a
    // wrong result on one count keeps the step out (knownFailure below), as the arithmetic is the same.
    failed: (k) => reportedFailure(record.sha256, k, device, context),
  });
  const { key, threads, why: threadsWhy, trial } = threading;
  // Before any download: a session with an operator its bundle has no kernel for cannot be created.
  // A form with every kernel here (gemm) is then the step's only file, if it is not known to fail here.
  const noKernel = missingKernelReason(runtime, record.operator_types);
  const only = noKernel ? runnableForms(record, runtime, key, device, context) : null;
  if (noKernel && !only.forms.length) return { skip: only.skip ?? noKernel };
  const noF16 = shaderF16Reason(runtime, record, device);
  if (noF16) return { skip: noF16 };
  if (!only) {
    const failed = knownFailure(record.sha256, key, device, context);
    if (failed) return { skip: failed };
  }
  const step = { model, variant, record, runtime, key };
  const { form, why: formWhy } = context.pin?.form
    ? { form: context.pin.form, why: `${context.pin.form} form pinned` }
    : only
      ? onlyForm(step, only.forms, noKernel, device, context)
      : chooseForm(step, device, context);
  if (only && !only.forms.some(([name]) => name === form)) return { skip: noKernel };
  const file = fileRecord(record, form);
  const c = cost({ ...step, form, record: file }, device, context);
  return { runtime, key, variant, form, formOnly: Boolean(only), threads, trial, threadsWhy, formWhy, file, cost: c };
}

// A step's figures and why, from its cost as the plan compares it (cost.js alike).
function priced(step, c) {
  step.cost = c;
  step.why = [
    `${formatMs(c.run.ms)} per run (${c.run.source}) x ${c.runs} expected ${c.runs === 1 ? "run" : "runs"}`,
    ...(c.create ? [`${formatMs(c.create.ms)} to create the session (${c.create.source})`] : []),
    downloadWhy(step.file, c),
    ...(step.formWhy ? [step.formWhy] : []),
    ...(c.late ? [c.software] : []),
    ...(step.threadsWhy ? [step.threadsWhy] : []),
  ].join(" + ");
  step.expectedMs = c.downloadMs === null ? null : c.ms; // what the page will pay, once the download's time is known
  Object.assign(step, {
    rankMs: c.ms,
    runMs: c.run.ms,
    createMs: c.create?.ms ?? null,
    downloadMs: c.downloadMs,
    measured: c.run.measured,
    late: c.late,
  });
}

// The steps whose place a step's why explains: the next one; for the first step (the plan's choice), also the
// step with the smallest download and the one with the fastest run, where they are not it: what it was chosen over.
function rivals(steps, i) {
  const next = steps[i + 1];
  if (i > 0) return next ? [next] : [];
  const best = (term) =>
    steps
      .slice(1)
      .filter((s) => !s.cost.late && term(s.cost) < term(steps[0].cost))
      .sort((a, b) => term(a.cost) - term(b.cost))[0];
  return [...new Set([next, best((c) => c.rankDownloadMs), best((c) => c.run.ms)])].filter(Boolean);
}

// A step as another step's why names it: its variant (and form), and its runtime where it is not the same.
function stepName(step, from) {
  const file = step.form ? `${step.variant}, ${step.form} form` : step.variant;
  return step.runtime === from.runtime ? file : `${file} on ${step.runtime}`;
}

// Why a file (by sha256) is left out on this runtime key: onnxport check found it wrong or unsupported on
// this kind of device, the fleet of this device class failed it, or this browser verified it failing (not tried
// again); null when none did.
function knownFailure(sha256, key, device, context) {
  const reported = reportedFailure(sha256, key, device, context);
  if (reported) return reported;
  if (context.verify !== "always") {
    const known = remembered(sha256, key, context.ortVersion, device);
    if (known && !known.ok) return `${known.reason} (verified ${known.at.slice(0, 10)}; not tried again)`;
  }
  return null;
}

// Why onnxport check or the fleet of this device class found a file failing on this runtime key, or null.
function reportedFailure(sha256, key, device, context) {
  const checked = checkedFailure(context.conformance, sha256, key, device);
  if (checked)
    return `onnxport check on this kind of device found it ${checked.status === "fail" ? "wrong" : "unsupported"}: ${checked.reason}`;
  return fleetFailure(context.fleet, sha256, key, device);
}

// {forms: [[name, record]], skip}: the variant's served forms for `key` whose every operator has a kernel in
// the runtime's bundle and that are not known to fail here; skip: why the last one left out was.
function runnableForms(record, runtime, key, device, context) {
  let skip = null;
  const forms = servedForms(record, key).filter(([name, form]) => {
    if (missingKernelReason(runtime, formOperatorTypes(form, record))) return false;
    const failed = knownFailure(form.sha256, key, device, context);
    if (failed) skip = `the ${name} form: ${failed}`;
    return !failed;
  });
  return { forms, skip };
}

// {form, why} where the variant as built cannot run: the runnable form that starts soonest by measurement
// (cost.js, like with like), else the first.
function onlyForm(step, forms, noKernel, device, context) {
  const timed = forms.map(([name]) => [
    name,
    cost({ ...step, form: name, record: fileRecord(step.record, name) }, device, context).start,
  ]);
  const measured = timed.filter(([, start]) => start).sort((a, b) => a[1].ms - b[1].ms);
  const [form, start] = measured[0] ?? [forms[0][0], null];
  const record = step.record.forms[form];
  const how = start ? `: ${formatMs(start.ms)} to create, run first and run warm (${start.source})` : "";
  return {
    form,
    why: `${form} form (${record.optimization}, ${record.format}), as the variant as built cannot run here (${noKernel})${how}`,
  };
}

// The download in words: its time only from a bandwidth measured here, else "time unknown" and why.
function downloadWhy(file, c) {
  if (c.cached) return "cached";
  const size = `${(file.bytes / 1024 ** 2).toFixed(1)} MB`;
  if (c.downloadMs === null) return `${size} to download, time unknown (${c.net.source})`;
  return `${formatMs(c.downloadMs)} to download ${size} (at ${c.net.source})`;
}

// {form, why}: the variant's file to load on the step's runtime key. A form only where it is both
// verified and measured to start sooner (cost.js), on this device or on a device of this kind;
// anything unknown keeps the variant as built: that is what every other check ran.
function chooseForm(step, device, context) {
  const base = cost(step, device, context).start;
  let best = { form: AS_BUILT, ms: base?.ms ?? Infinity, why: null };
  const forms = servedForms(step.record, step.key);
  const passed = [];
  for (const [name, form] of forms) {
    const verified = verifiedOn(form.sha256, step.key, device, context);
    const start = cost({ ...step, form: name, record: fileRecord(step.record, name) }, device, context).start;
    if (!verified || !start || !base || base.source !== start.source) continue;
    passed.push(name);
    if (start.ms < best.ms && startsSooner(start, base)) {
      best = {
        form: name,
        ms: start.ms,
        why: `${name} form (${form.optimization}, ${form.format}): ${formatMs(start.ms)} to create, run first and run warm, against ${formatMs(base.ms)} as built (${start.source}; ${verified})`,
      };
    }
  }
  if (best.form === AS_BUILT && forms.length) {
    best.why = passed.length
      ? `as built: no verified form measured ${Math.round((1 - MIN_GAIN) * 100)}% faster (${passed.join(", ")} measured)`
      : null;
  }
  return { form: best.form, why: best.why };
}

function verifiedOn(sha256, key, device, { conformance, ortVersion }) {
  if (checkedFailure(conformance, sha256, key, device)) return null; // wrong or unsupported there
  if (checkedVerdicts(conformance, sha256, key, device).some((v) => v.status === "pass")) {
    return "verified by onnxport check on this kind of device";
  }
  const known = remembered(sha256, key, ortVersion, device);
  return known?.ok ? "verified in this browser" : null;
}
