// The files of a variant: the variant as built, or one of its optimized forms (docs/manifest.md,
// "forms": the ORT format, a basic-level .onnx, a transformer-fused graph). A form is the same model
// saved so a session starts sooner; which one the plan takes is decided in plan.js (chooseForm) by
// cost.js's rule.

export const AS_BUILT = null;

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
