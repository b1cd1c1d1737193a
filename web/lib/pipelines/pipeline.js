// model.pipeline(input): raw input in, the answer out, by the model's own spec (the manifest's `pipeline`,
// docs/reference/manifest.md). Its files (tokenizer.json...) are the model's assets, fetched, sha256-verified and
// cached like artifacts; the tokenizer library comes from the onnxport server (/vendor/tokenizers/), as
// onnxruntime-web does, so a page on any origin needs no import map and no tokenizer code of its own.
/** @import { Tensors } from "../tensors/tensors.js" */
/** @import { TextInput, TextSpec } from "./text.js" */
/** @import { Answer, AnswerSpec } from "./answers.js" */
/** @import { ImageInput, ImageSpec } from "./image.js" */
import { loadArtifact } from "../files/downloads.js";
import { answers } from "./answers.js";
import { decodeImage, imageBase64, pixelsOf, tensorOf } from "./image.js";
import { TextPipeline } from "./text.js";

/** @typedef {{text?: TextSpec, image?: ImageSpec, answer: AnswerSpec}} PipelineSpec */
/** What pipeline() takes: text (or a pair), an image, or a list of either. @typedef {TextInput | ImageInput} RawInput */
/**
 * What model.pipeline() returns: one answer per input (`answer` is the first), the tensors it made (none when
 * the model runs on the server, which makes them itself from the raw input), the model's raw outputs, and where
 * the time went.
 * @typedef {object} PipelineResult
 * @property {Answer} answer
 * @property {Answer[]} answers
 * @property {Tensors} feeds
 * @property {Tensors} outputs
 * @property {{preprocessMs: number, runMs: number, answerMs: number}} timings
 */

/**
 * Raw input to answers in this page: encoded here, run by `run` (the model's own run), answered here.
 * @param {{encode: (inputs: RawInput[]) => Promise<Tensors>, answers: (outputs: Tensors, feeds?: Tensors) => Answer[]}} pipeline
 * @param {RawInput[]} inputs
 * @param {(feeds: Tensors) => Promise<{outputs: Tensors, runMs: number}>} run
 * @returns {Promise<PipelineResult>}
 */
async function answerHere(pipeline, inputs, run) {
  const started = performance.now();
  const feeds = await pipeline.encode(inputs);
  const preprocessMs = performance.now() - started;
  const { outputs, runMs } = await run(feeds);
  const answering = performance.now();
  const answers = pipeline.answers(outputs, feeds);
  return {
    answer: answers[0],
    answers,
    feeds,
    outputs,
    timings: { preprocessMs, runMs, answerMs: performance.now() - answering },
  };
}

/**
 * The Python-equivalent preprocessing and answer of one model, ready to run; `raw` makes of raw input the
 * input the server's side of the same pipeline takes (a BYTES tensor: texts or pairs, images in base64).
 * @param {{fileUrl: (file: string) => string, url: (path: string) => string}} client
 * @param {import("../files/manifest.js").ModelEntry} model
 */
export async function openPipeline(client, model) {
  const spec = model.pipeline;
  if (!spec) throw new Error(`${model.name} has no pipeline in its manifest entry: give it tensors with run(feeds)`);
  /** @param {Tensors} outputs @param {Tensors} [feeds] @returns {Answer[]} */
  const answersOf = (outputs, feeds) => {
    const output = outputs[spec.answer.output];
    if (!output) throw new Error(`${model.name}: the run gave no output ${JSON.stringify(spec.answer.output)}`);
    return answers(spec.answer, output, feeds);
  };
  if (spec.image) {
    const image = spec.image;
    /** The pixels before normalization, per image (what `onnxport check` compares with Pillow's). @param {ImageInput[]} inputs */
    const pixels = async (inputs) => {
      const out = [];
      for (const input of inputs) out.push(pixelsOf(image, await decodeImage(input)));
      return out;
    };
    return withAnswer({
      spec,
      pixels,
      /** @param {RawInput[]} inputs @returns {Promise<Tensors>} */
      async encode(inputs) {
        const rows = (await pixels(/** @type {ImageInput[]} */ (inputs))).map((p) => tensorOf(image, p));
        return { [image.input]: stack(rows) };
      },
      answers: answersOf,
      /** @param {RawInput[]} inputs */
      raw: async (inputs) =>
        bytesInput(
          "image",
          [inputs.length],
          await Promise.all(inputs.map((i) => imageBase64(/** @type {ImageInput} */ (i)))),
        ),
    });
  }
  if (!spec.text) throw new Error(`${model.name}: its pipeline has neither text nor image`);
  const asset = async (/** @type {string|null} */ label) => {
    if (label === null) return null;
    const record = model.assets?.[label];
    if (!record)
      throw new Error(
        `${model.name}: its pipeline names the asset ${JSON.stringify(label)}, which the manifest does not publish`,
      );
    const { bytes } = await loadArtifact(client.fileUrl(record.file), record);
    return JSON.parse(new TextDecoder().decode(bytes));
  };
  const moduleUrl = client.url("vendor/tokenizers/tokenizers.min.mjs");
  const [{ Tokenizer }, tokenizerJson, configJson] = await Promise.all([
    import(/* @vite-ignore */ moduleUrl),
    asset(spec.text.tokenizer),
    asset(spec.text.config),
  ]);
  const text = new TextPipeline(Tokenizer, spec.text, tokenizerJson, configJson);
  return withAnswer({
    spec,
    /** @param {RawInput[]} inputs @returns {Promise<Tensors>} */
    encode: async (inputs) => text.encode(/** @type {TextInput[]} */ (inputs)),
    answers: answersOf,
    /** @param {RawInput[]} inputs */
    raw: async (inputs) =>
      bytesInput(
        "text",
        Array.isArray(inputs[0]) ? [inputs.length, 2] : [inputs.length],
        /** @type {string[]} */ (inputs.flat()),
      ),
  });
}

/**
 * The pipeline with its `answer(inputs, run)`: raw input to answers in this page (answerHere).
 * @template {{encode: (inputs: RawInput[]) => Promise<Tensors>, answers: (outputs: Tensors, feeds?: Tensors) => Answer[]}} P
 * @param {P} pipeline
 */
function withAnswer(pipeline) {
  return {
    ...pipeline,
    /** @param {RawInput[]} inputs @param {(feeds: Tensors) => Promise<{outputs: Tensors, runMs: number}>} run */
    answer: (inputs, run) => answerHere(pipeline, inputs, run),
  };
}

/** A V2 BYTES input. @param {string} name @param {number[]} shape @param {string[]} data */
function bytesInput(name, shape, data) {
  return { name, datatype: /** @type {const} */ ("BYTES"), shape, data };
}

/** One tensor of [n, ...] from n tensors of [1, ...]. @param {import("../tensors/tensors.js").Tensor[]} rows */
function stack(rows) {
  const data = new Float32Array(rows.reduce((n, t) => n + t.data.length, 0));
  let at = 0;
  for (const row of rows) {
    data.set(/** @type {Float32Array} */ (row.data), at);
    at += row.data.length;
  }
  return { type: /** @type {const} */ ("float32"), dims: [rows.length, ...rows[0].dims.slice(1)], data };
}

/**
 * Inputs as a list: one text (or one pair) or one image becomes a list of one.
 * @param {RawInput | RawInput[]} input @param {PipelineSpec} spec
 * @returns {RawInput[]}
 */
export function asBatch(input, spec) {
  if (spec.image) {
    const list = Array.isArray(input) ? input : [input];
    if (!list.length) throw new Error("pipeline() got an empty list");
    return list;
  }
  if (typeof input === "string") return [input];
  if (!Array.isArray(input))
    throw new Error(`pipeline() takes text (a string, or a list of strings), got ${typeof input}`);
  if (spec.text?.pair && input.length === 2 && typeof input[0] === "string")
    return [/** @type {[string, string]} */ (input)];
  if (input.length === 0) throw new Error("pipeline() got an empty list");
  return /** @type {RawInput[]} */ (input);
}
