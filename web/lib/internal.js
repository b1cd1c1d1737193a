// The library's internals that onnxport's own pages (web/app) use: the conformance check, the bench,
// the playground's input widgets and verdicts. It is for those pages, NOT a stable API: names come
// and go here with the pages' needs, without notice. A page of your own imports index.js, the
// public API. web/app imports the library through index.js and this module only
// (tests/js/app/test_app_imports.mjs keeps it so).
export { compareOutput, taskMetric } from "./verification/compare.js";
export { AS_BUILT, fileRecord, servedForms } from "./choice/forms.js";
export { judgementRule, judgeRun } from "./verification/judgement.js";
export { renderReason } from "./verification/reasons.js";
export { tensorType } from "./files/manifest.js";
export { readNpy, readNpz } from "./tensors/npy.js";
export { placement } from "./choice/placement.js";
export { cannotRun, CHECKED, inBrowser, runtime, unavailableReason } from "./choice/runtimes.js";
export { serverInfer } from "./tensors/server-api.js";
export { openSession } from "./model/session.js";
export { recordMeasured } from "./remembered/speeds.js";
export {
  argmax,
  ARRAYS,
  cosine,
  decodeTensors,
  encodeTensors,
  leadingRows,
  maxAbsDiff,
  row,
  softmax,
} from "./tensors/tensors.js";
export { dropWorker } from "./model/workers.js";
export { threadCeiling } from "./choice/probe.js";
