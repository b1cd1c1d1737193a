// onnxport's browser library. Any page can import it from an onnxport server, as one file (dist/onnxport.js,
// made from these sources by bundle.mjs) or as these modules:
//   import { connect } from "https://models.example/web/lib/dist/onnxport.js";
//   const client = connect("https://models.example/");
//   const model = await client.load("minilm", { onProgress, runtime, variant, verify });
//   const { outputs } = await model.run(feeds);  model.choice says where it ran and why.
//   const { answer } = await model.pipeline("some text");  raw input, by the model's own pipeline.
export { Client, connect, LoadError, ORT_WEB_VERSION } from "./client/client.js";
export { clearCache } from "./files/downloads.js";
export { served, variants } from "./files/manifest.js";
export { probe, deviceKind } from "./choice/probe.js";
export { classKey, deviceClass } from "./choice/fleet.js";
// The runtime names load() accepts as a pin (runtimes.js has the table they come from).
export { PINNABLE as RUNTIMES } from "./choice/runtimes.js";
export { forgetVerdicts } from "./choice/artifact-verdicts.js";
export { forgetThreads } from "./choice/threads.js";
export { tensor } from "./tensors/tensors.js";

// The public API's types (types.js and the modules that define them; the npm package's declarations are
// generated from these JSDoc comments).
/** @typedef {import("./types.js").ClientOptions} ClientOptions */
/** @typedef {import("./types.js").LoadOptions} LoadOptions */
/** @typedef {import("./types.js").Choice} Choice */
/** @typedef {import("./types.js").Plan} Plan */
/** @typedef {import("./types.js").PlanStep} PlanStep */
/** @typedef {import("./model/model.js").LoadedModel} LoadedModel */
/** @typedef {import("./model/model.js").RunResult} RunResult */
/** @typedef {import("./pipelines/pipeline.js").PipelineResult} PipelineResult */
/** @typedef {import("./pipelines/answers.js").Answer} Answer */
/** @typedef {import("./tensors/tensors.js").Tensor} Tensor */
/** @typedef {import("./tensors/tensors.js").Tensors} Tensors */
/** @typedef {import("./tensors/tensors.js").TensorType} TensorType */
/** @typedef {import("./tensors/tensors.js").TensorData} TensorData */
/** @typedef {import("./choice/probe.js").Device} Device */
/** @typedef {import("./files/manifest.js").Manifest} Manifest */
/** @typedef {import("./files/manifest.js").ModelEntry} ModelEntry */
/** @typedef {import("./files/manifest.js").VariantRecord} VariantRecord */
