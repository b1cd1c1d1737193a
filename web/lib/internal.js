// The library's internals that onnxport's own pages (web/app) use: the conformance check, the bench,
// the playground's input widgets and verdicts. It is for those pages, NOT a stable API: names come
// and go here with the pages' needs, without notice. A page of your own imports index.js, the
// public API. web/app imports the library through index.js and this module only
// (tests/js/test_app_imports.mjs keeps it so).
export { compareOutput, taskMetric } from "./compare.js";
export { AS_BUILT, fileRecord, servedForms } from "./forms.js";
export { judgementRule, judgeRun } from "./judge.js";
export { tensorType } from "./manifest.js";
export { readNpy, readNpz } from "./npy.js";
export { placement } from "./placement.js";
export { cannotRun, CHECKED, inBrowser, runtime, unavailableReason } from "./runtimes.js";
export { serverInfer } from "./server-api.js";
export { openSession } from "./session.js";
export { recordMeasured } from "./speeds.js";
export { argmax, ARRAYS, cosine, decodeTensors, encodeTensors, leadingRows, maxAbsDiff, row, softmax } from "./tensors.js";
export { dropWorker } from "./workers.js";
