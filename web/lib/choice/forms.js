// The files of a variant: the variant as built, or one of its optimized forms (docs/reference/manifest.md,
// "forms": the ORT format, a basic-level .onnx, a transformer-fused graph, tree ensembles as tensor
// operators). A form is the same model saved so a session starts sooner, or, for `gemm`, so that a
// runtime without ai.onnx.ml kernels (WebGPU) runs it; which one the plan takes is decided in plan.js
// (chooseForm) by cost.js's rule.

export const AS_BUILT = null;

// [name, record] of the variant's served forms, in the manifest's order; with a runtime key
// (runtimes.js), only those made for it (a form's `runtimes`, null: any).
export function servedForms(record, runtime = null) {
  return Object.entries(record.forms ?? {}).filter(
    ([, form]) =>
      form.status === "ok" && form.file && (runtime === null || !form.runtimes || form.runtimes.includes(runtime)),
  );
}

// The record to load for (variant, form): a form record has the variant's file keys
// (file, sha256, bytes, reference), so downloads, sessions and verification take either.
export function fileRecord(variantRecord, form) {
  if (form === AS_BUILT) return variantRecord;
  const record = variantRecord.forms?.[form];
  if (record?.status !== "ok")
    throw new Error(
      `form ${JSON.stringify(form)} is not served; served forms: ${
        servedForms(variantRecord)
          .map(([n]) => n)
          .join(", ") || "none"
      }`,
    );
  return { ...record, precision: variantRecord.precision, speed: variantRecord.speed };
}

// The operator types ("domain/OpType", as the manifest's operator_types) of a form, from its `operators`
// histogram (keyed "OpType" for the default domain, "domain.OpType" otherwise); a form without one (the
// ORT format) has its variant's.
export function formOperatorTypes(formRecord, variantRecord) {
  if (!formRecord.operators) return variantRecord.operator_types ?? [];
  return Object.keys(formRecord.operators).map((op) => {
    const dot = op.lastIndexOf(".");
    return dot < 0 ? `ai.onnx/${op}` : `${op.slice(0, dot)}/${op.slice(dot + 1)}`;
  });
}
