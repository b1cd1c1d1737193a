// model.pipeline(input): raw input in, the answer out, by the model's own spec (the manifest's `pipeline`,
// docs/manifest.md). Its files (tokenizer.json...) are the model's assets, fetched, sha256-verified and
// cached like artifacts; the tokenizer library comes from the onnxport server (/vendor/tokenizers/), as
// onnxruntime-web does, so a page on any origin needs no import map and no tokenizer code of its own.
/** @import { Tensors } from "./tensors.js" */
/** @import { TextInput, TextSpec } from "./text-pipeline.js" */
/** @import { Answer, AnswerSpec } from "./answers.js" */
import { answers } from "./answers.js";
import { loadArtifact } from "./downloads.js";
import { TextPipeline } from "./text-pipeline.js";

/** @typedef {{text?: TextSpec, answer: AnswerSpec}} PipelineSpec */
/**
 * What model.pipeline() returns: one answer per input (`answer` is the first), the tensors it made and
 * the model's raw outputs, and where the time went.
 * @typedef {object} PipelineResult
 * @property {Answer} answer
 * @property {Answer[]} answers
 * @property {Tensors} feeds
 * @property {Tensors} outputs
 * @property {{preprocessMs: number, runMs: number, answerMs: number}} timings
 */

/**
 * The Python-equivalent preprocessing and answer of one model, ready to run.
 * @param {{fileUrl: (file: string) => string, url: (path: string) => string}} client
 * @param {import("./manifest.js").ModelEntry} model
 */
export async function openPipeline(client, model) {
  const spec = model.pipeline;
  if (!spec) throw new Error(`${model.name} has no pipeline in its manifest entry: give it tensors with run(feeds)`);
  if (!spec.text) throw new Error(`${model.name}: this library runs text pipelines; its pipeline is of another kind`);
  const asset = async (/** @type {string|null} */ label) => {
    if (label === null) return null;
    const record = model.assets?.[label];
    if (!record) throw new Error(`${model.name}: its pipeline names the asset ${JSON.stringify(label)}, which the manifest does not publish`);
    const { bytes } = await loadArtifact(client.fileUrl(record.file), record);
    return JSON.parse(new TextDecoder().decode(bytes));
  };
  const moduleUrl = client.url("vendor/tokenizers/tokenizers.min.mjs");
  const [{ Tokenizer }, tokenizerJson, configJson] = await Promise.all([
    import(/* @vite-ignore */ moduleUrl), asset(spec.text.tokenizer), asset(spec.text.config)]);
  const text = new TextPipeline(Tokenizer, spec.text, tokenizerJson, configJson);
  return {
    spec,
    /** @param {TextInput[]} inputs @returns {Tensors} */
    encode: (inputs) => text.encode(inputs),
    /** @param {Tensors} outputs @returns {Answer[]} */
    answers(outputs) {
      const output = outputs[spec.answer.output];
      if (!output) throw new Error(`${model.name}: the run gave no output ${JSON.stringify(spec.answer.output)}`);
      return answers(spec.answer, output);
    },
  };
}

/**
 * Inputs as a list: one text (or one pair) becomes a list of one.
 * @param {TextInput | TextInput[]} input @param {boolean} pair
 * @returns {TextInput[]}
 */
export function asBatch(input, pair) {
  if (typeof input === "string") return [input];
  if (!Array.isArray(input)) throw new Error(`pipeline() takes text (a string, or a list of strings), got ${typeof input}`);
  if (pair && input.length === 2 && typeof input[0] === "string") return [/** @type {[string, string]} */ (input)];
  if (input.length === 0) throw new Error("pipeline() got an empty list");
  return /** @type {TextInput[]} */ (input);
}
