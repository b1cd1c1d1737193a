// Which file of a variant to load: the variant as built, or one of its optimized forms
// (docs/manifest.md, "forms": the ORT format, a basic-level .onnx, a transformer-fused graph).
// A form is the same model saved so a session starts sooner; it is used only where it is both
// verified and measured faster, on this device or on a device of this kind. Anything unknown
// keeps the variant as built: that is what every other check ran.
import { deviceKind } from "./probe.js";
import { formatMs, ownSpeed } from "./speeds.js";
import { checkedFailure, checkedVerdicts, remembered } from "./verdicts.js";

export const AS_BUILT = null;
// A form must beat the variant as built by more than one bench run's noise (about 5% here):
// a near tie keeps the file every other check ran.
export const MIN_GAIN = 0.9;

// [name, record] of the variant's served forms, in the manifest's order; with a runtime key
// (runtimes.js), only those made for it (a form's `runtimes`, null: any).
export function servedForms(record, runtime = null) {
  return Object.entries(record.forms ?? {}).filter(([, form]) => form.status === "ok" && form.file
    && (runtime === null || !form.runtimes || form.runtimes.includes(runtime)));
}

// The record to load for (variant, form): a form record has the variant's file keys
// (file, sha256, bytes, reference), so downloads, sessions and verification take either.
export function fileRecord(variantRecord, form) {
  if (form === AS_BUILT) return variantRecord;
  const record = variantRecord.forms?.[form];
  if (!record || record.status !== "ok") throw new Error(`form ${JSON.stringify(form)} is not served; served forms: ${servedForms(variantRecord).map(([n]) => n).join(", ") || "none"}`);
  return { ...record, precision: variantRecord.precision, speed: variantRecord.speed };
}

// {form, why}: the form to load for this variant and runtime key. context: {bench, conformance, ortVersion}.
export function chooseForm(variantRecord, key, device, context) {
  const base = startCost(variantRecord, key, device, context);
  let best = { form: AS_BUILT, cost: base?.ms ?? Infinity, why: null };
  const passed = [];
  for (const [name, form] of servedForms(variantRecord, key)) {
    const verified = verifiedOn(form.sha256, key, device, context);
    const cost = startCost(form, key, device, context);
    if (!verified || !cost || !base || base.source !== cost.source) continue;
    passed.push(name);
    if (cost.ms < best.cost && cost.ms < base.ms * MIN_GAIN) {
      best = { form: name, cost: cost.ms, why: `${name} form (${form.optimization}, ${form.format}): ${formatMs(cost.ms)} to create, run first and run warm, against ${formatMs(base.ms)} as built (${cost.source}; ${verified})` };
    }
  }
  if (best.form === AS_BUILT && servedForms(variantRecord, key).length) {
    best.why = passed.length ? `as built: no verified form measured ${Math.round((1 - MIN_GAIN) * 100)}% faster (${passed.join(", ")} measured)` : null;
  }
  return { form: best.form, why: best.why };
}

// What a cached start costs: session creation and a warm run, from this browser's own measurements
// of both files when it has them (the performance page records those), else creation, the first
// run and a warm run from the bench on a device of this kind. Only like is compared with like.
function startCost(record, key, device, { bench }) {
  const own = ownSpeed(record.sha256, key);
  if (typeof own?.create_ms === "number" && typeof own?.warm_ms === "number") {
    return { ms: own.create_ms + own.warm_ms, source: "measured in this browser" };
  }
  const benched = bench?.browser;
  if (!benched?.device || deviceKind(benched.device) !== deviceKind(device)) return null;
  const row = benched.results?.find((r) => r.sha256 === record.sha256 && r.runtime === key && r.status === "ok");
  if (!row?.cached || !row.warm) return null;
  return { ms: row.cached.create_ms + row.cached.first_run_ms + row.warm.median_ms, source: "onnxport bench on this kind of device" };
}

function verifiedOn(sha256, key, device, { conformance, ortVersion }) {
  if (checkedFailure(conformance, sha256, key, device)) return null; // wrong or unsupported there
  if (checkedVerdicts(conformance, sha256, key, device).some((v) => v.status === "pass")) {
    return "verified by onnxport check on this kind of device";
  }
  const known = remembered(sha256, key, ortVersion, device);
  return known?.ok ? "verified in this browser" : null;
}
