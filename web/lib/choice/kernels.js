// Which operators each runtime's onnxruntime-web bundle has no kernel for: a session with one of
// them fails at creation ("No Op registered"), after the whole download. The plan reads the
// variant's manifest "operator_types" and leaves such a runtime out before any download.
//
// MEASURED, not read from documentation: scripts/generate/measure_kernels.py writes a one-node model per
// operator below (each checked by native onnxruntime first) and creates a session from it in this
// machine's Chromium on the bundle each runtime loads (ort-runtime.js), onnxruntime-web 1.30.0:
//   wasm   ort.wasm.min.mjs, execution provider wasm
//   webgpu ort.webgpu.min.mjs, execution provider webgpu (SwiftShader): nodes without a WebGPU
//          kernel fall back to the bundle's CPU kernels, so only ops missing from both are listed
//   webnn  ort.webgpu.min.mjs, execution provider wasm: the CPU kernels WebNN falls back to per
//          node in that bundle (no WebNN context here to try WebNN itself)
// Re-measure after changing the onnxruntime-web version: .venv/bin/python scripts/generate/measure_kernels.py --write
// Found with 1.30.0: ort.webgpu has no ai.onnx.ml operator at all (its CPU kernels are built
// without that domain); every probed quantized and com.microsoft operator has a kernel in both
// bundles, ConvInteger, MatMulInteger and DynamicQuantizeLSTM included, except GatherBlockQuantized,
// which ort.webgpu's CPU kernels lack (so webnn cannot fall back to it) while its WebGPU kernel runs.
// The weight-only operators (issue 35), each probed in several forms (PROBES in the script):
// MatMulNBits bits 4 and 8, block_size 32 and 128, with and without accuracy_level 4, and bits 4 with
// float16 activations; GatherBlockQuantized 4-bit packed in uint8 and as int4; DequantizeLinear int8
// per axis, and at opset 21 int8 and int4 with blocked scales. Every form has a kernel on wasm and on
// webgpu (SwiftShader), and each run matched native onnxruntime (outputs within 1e-3 + 1e-2 x their
// largest value) except: MatMulNBits with float16 activations on webgpu creates a session and then
// fails its run ("Program MatMulNBits requires f16 but the device does not support it": SwiftShader
// has no shader-f16, and the node is not handed back to the CPU). So no operator here is missing
// for some forms only (MISSING_FORMS is empty); if one were, the table, per "domain/OpType" as the
// manifest's operator_types are, could not say which form a variant uses, and lists it there.
// An operator outside PROBED is assumed to have a kernel: the session's creation remains the test.
import { runtime as runtimeRow } from "./runtimes.js";

// BEGIN MEASURED (scripts/generate/measure_kernels.py --write)
export const PROBED = Object.freeze([
  "ai.onnx.ml/ArrayFeatureExtractor",
  "ai.onnx.ml/Binarizer",
  "ai.onnx.ml/FeatureVectorizer",
  "ai.onnx.ml/Imputer",
  "ai.onnx.ml/LabelEncoder",
  "ai.onnx.ml/LinearClassifier",
  "ai.onnx.ml/LinearRegressor",
  "ai.onnx.ml/Normalizer",
  "ai.onnx.ml/OneHotEncoder",
  "ai.onnx.ml/SVMClassifier",
  "ai.onnx.ml/SVMRegressor",
  "ai.onnx.ml/Scaler",
  "ai.onnx.ml/TreeEnsembleClassifier",
  "ai.onnx.ml/TreeEnsembleRegressor",
  "ai.onnx.ml/ZipMap",
  "ai.onnx/ConvInteger",
  "ai.onnx/DequantizeLinear",
  "ai.onnx/DynamicQuantizeLinear",
  "ai.onnx/MatMulInteger",
  "ai.onnx/QLinearConv",
  "ai.onnx/QLinearMatMul",
  "ai.onnx/QuantizeLinear",
  "com.microsoft/BiasGelu",
  "com.microsoft/DequantizeLinear",
  "com.microsoft/DynamicQuantizeLSTM",
  "com.microsoft/DynamicQuantizeMatMul",
  "com.microsoft/FastGelu",
  "com.microsoft/GatherBlockQuantized",
  "com.microsoft/Gelu",
  "com.microsoft/MatMulIntegerToFloat",
  "com.microsoft/MatMulNBits",
  "com.microsoft/QLinearAdd",
  "com.microsoft/QLinearGlobalAveragePool",
  "com.microsoft/QLinearSigmoid",
  "com.microsoft/QuantizeLinear",
  "com.microsoft/SkipLayerNormalization",
]);
export const MISSING = Object.freeze({
  wasm: Object.freeze([]),
  webgpu: Object.freeze([
    "ai.onnx.ml/ArrayFeatureExtractor",
    "ai.onnx.ml/Binarizer",
    "ai.onnx.ml/FeatureVectorizer",
    "ai.onnx.ml/Imputer",
    "ai.onnx.ml/LabelEncoder",
    "ai.onnx.ml/LinearClassifier",
    "ai.onnx.ml/LinearRegressor",
    "ai.onnx.ml/Normalizer",
    "ai.onnx.ml/OneHotEncoder",
    "ai.onnx.ml/Scaler",
    "ai.onnx.ml/SVMClassifier",
    "ai.onnx.ml/SVMRegressor",
    "ai.onnx.ml/TreeEnsembleClassifier",
    "ai.onnx.ml/TreeEnsembleRegressor",
    "ai.onnx.ml/ZipMap",
  ]),
  webnn: Object.freeze([
    "ai.onnx.ml/ArrayFeatureExtractor",
    "ai.onnx.ml/Binarizer",
    "ai.onnx.ml/FeatureVectorizer",
    "ai.onnx.ml/Imputer",
    "ai.onnx.ml/LabelEncoder",
    "ai.onnx.ml/LinearClassifier",
    "ai.onnx.ml/LinearRegressor",
    "ai.onnx.ml/Normalizer",
    "ai.onnx.ml/OneHotEncoder",
    "ai.onnx.ml/Scaler",
    "ai.onnx.ml/SVMClassifier",
    "ai.onnx.ml/SVMRegressor",
    "ai.onnx.ml/TreeEnsembleClassifier",
    "ai.onnx.ml/TreeEnsembleRegressor",
    "ai.onnx.ml/ZipMap",
    "com.microsoft/GatherBlockQuantized",
  ]),
});
// Operators with a kernel for some of their probed forms only (which forms have none): not in MISSING.
export const MISSING_FORMS = Object.freeze({
  wasm: Object.freeze({}),
  webgpu: Object.freeze({}),
  webnn: Object.freeze({}),
});
// END MEASURED

// A runtime's row of MISSING: its `kernels` in runtimes.js (wasm-1t loads the wasm bundle).
const bundleOf = (runtime) => runtimeRow(runtime)?.kernels ?? runtime;

const domainOf = (op) => op.slice(0, op.lastIndexOf("/"));

// A domain every probed operator of which is missing was left out of the bundle's build
// (ai.onnx.ml in ort.webgpu): its operators that were not probed are missing too.
function missingDomains(bundle) {
  const missing = new Set(MISSING[bundle] ?? []);
  const domains = new Set(PROBED.map(domainOf));
  return new Set([...domains].filter((d) => PROBED.filter((op) => domainOf(op) === d).every((op) => missing.has(op))));
}

// The operator types of `operatorTypes` ("domain/OpType", the manifest's operator_types) that
// `runtime`'s bundle has no kernel for.
export function missingKernels(runtime, operatorTypes) {
  const bundle = bundleOf(runtime);
  const missing = new Set(MISSING[bundle] ?? []);
  const domains = missingDomains(bundle);
  return (operatorTypes ?? []).filter((op) => missing.has(op) || domains.has(domainOf(op)));
}

// The plan's reason for leaving a runtime out, or null when every operator has a kernel.
export function missingKernelReason(runtime, operatorTypes) {
  const missing = missingKernels(runtime, operatorTypes);
  if (!missing.length) return null;
  const shown = missing.slice(0, 3).join(", ") + (missing.length > 3 ? ` and ${missing.length - 3} more` : "");
  return `its onnxruntime-web bundle has no kernel for ${shown}`;
}
