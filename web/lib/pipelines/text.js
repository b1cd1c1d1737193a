// The browser side of a text pipeline (the manifest's `pipeline.text`, docs/reference/manifest.md): Hugging Face's
// tokenizers for JavaScript (@huggingface/tokenizers), with the spec's truncation and padding, as
// server/onnxport/pipelines/text.py does with the Python library. tests/js/lib/pipelines/test_text_vectors.mjs
// holds the two to the same ids (tests/vectors/text_vectors.json), token by token, on every text of the corpus.
/** @import { Tensors } from "../tensors/tensors.js" */
import { ARRAYS, tensor } from "../tensors/tensors.js";

/**
 * A text pipeline's spec (the manifest's `pipeline.text`).
 * @typedef {object} TextSpec
 * @property {string} tokenizer the asset label of tokenizer.json
 * @property {string|null} config the asset label of tokenizer_config.json
 * @property {number} max_length tokens per text, special tokens included
 * @property {"right"|"left"} truncation
 * @property {"longest"} padding
 * @property {boolean} pair
 * @property {{ids: string, mask: string|null, type_ids: string|null}} inputs
 * @property {"int64"|"int32"} dtype
 */
/** One text, or a pair of texts for a model whose spec says `pair`. @typedef {string|[string, string]} TextInput */

export class TextPipeline {
  /**
   * @param {any} Tokenizer the Tokenizer class of @huggingface/tokenizers
   * @param {TextSpec} spec
   * @param {object} tokenizerJson tokenizer.json, parsed
   * @param {object|null} configJson tokenizer_config.json, parsed (or null)
   */
  constructor(Tokenizer, spec, tokenizerJson, configJson) {
    this.spec = spec;
    this.tokenizer = new Tokenizer(tokenizerJson, configJson ?? {});
    // The file's own truncation and padding are not applied by this library, and must not be: only the spec decides.
    const padding = /** @type {any} */ (tokenizerJson).padding;
    this.padId = padding?.pad_id ?? this.#firstKnown(["[PAD]", "<pad>", "<|padding|>", "<|endoftext|>"]) ?? 0;
    this.padTypeId = padding?.pad_type_id ?? 0;
  }

  /** @param {string[]} tokens @returns {number|undefined} */
  #firstKnown(tokens) {
    for (const token of tokens) {
      const id = this.tokenizer.token_to_id(token);
      if (id !== undefined) return id;
    }
    return undefined;
  }

  /**
   * The model's feeds for a batch of texts, padded to the longest.
   * @param {TextInput[]} texts
   * @returns {Tensors}
   */
  encode(texts) {
    if (!texts.length) throw new Error("no texts to encode");
    const rows = texts.map((text) => this.#encodeOne(text));
    const length = Math.max(...rows.map((row) => row.ids.length));
    const names = this.spec.inputs;
    const Array_ = ARRAYS[this.spec.dtype];
    const big = this.spec.dtype === "int64";
    const fill = (/** @type {(row: any) => number[]} */ pick, /** @type {number} */ pad) => {
      const data = new Array_(texts.length * length);
      rows.forEach((row, r) => {
        const values = pick(row);
        for (let c = 0; c < length; c += 1) {
          const value = c < values.length ? values[c] : pad;
          data[r * length + c] = /** @type {never} */ (big ? BigInt(value) : value);
        }
      });
      return tensor(this.spec.dtype, [texts.length, length], data);
    };
    /** @type {Tensors} */
    const feeds = { [names.ids]: fill((row) => row.ids, this.padId) };
    if (names.mask) feeds[names.mask] = fill((row) => row.ids.map(() => 1), 0);
    if (names.type_ids) feeds[names.type_ids] = fill((row) => row.typeIds, this.padTypeId);
    return feeds;
  }

  /** @param {TextInput} text @returns {{ids: number[], typeIds: number[]}} */
  #encodeOne(text) {
    const pair = Array.isArray(text);
    if (this.spec.pair !== pair) {
      throw new Error(
        this.spec.pair
          ? "this model takes pairs of texts: give each input as [first, second]"
          : "this model takes single texts, not pairs",
      );
    }
    if (pair && (typeof text[0] !== "string" || typeof text[1] !== "string")) throw new Error("a pair is two strings");
    if (!pair && typeof text !== "string") throw new Error(`a text must be a string, got ${typeof text}`);
    const tok = this.tokenizer;
    // encode_text (the normalized, pre-tokenized and split pieces, before special tokens) is not in the
    // library's types; its version is pinned (package.json) and the corpus test would see a change.
    const first = tok.encode_text(pair ? text[0] : text) ?? [];
    const second = pair ? (tok.encode_text(text[1]) ?? []) : null;
    const [keepFirst, keepSecond] = keptLengths(
      first.length,
      second?.length ?? null,
      this.spec.max_length - this.#specials(pair),
    );
    const cut = (/** @type {string[]} */ pieces, /** @type {number} */ keep) =>
      this.spec.truncation === "right" ? pieces.slice(0, keep) : pieces.slice(pieces.length - keep);
    const processed = tok.post_processor
      ? tok.post_processor(cut(first, keepFirst), second && cut(second, keepSecond ?? 0), true)
      : { tokens: [...cut(first, keepFirst), ...(second ? cut(second, keepSecond ?? 0) : [])] };
    const ids = processed.tokens.map(
      (/** @type {string} */ t) =>
        tok.added_tokens_map.get(t)?.id ?? tok.model.tokens_to_ids.get(t) ?? tok.model.unk_token_id,
    );
    return { ids, typeIds: processed.token_type_ids ?? ids.map(() => 0) };
  }

  /** How many special tokens the post-processor adds to one text or a pair. @param {boolean} pair */
  #specials(pair) {
    const tok = this.tokenizer;
    if (!tok.post_processor) return 0;
    return tok.post_processor([], pair ? [] : null, true).tokens.length;
  }
}

/**
 * The lengths the pieces are cut to, as the Python library's `longest_first` truncation decides them: a
 * single text keeps `room`; a pair cuts the longer one first, and both to half of the room when needed.
 * @param {number} n1 @param {number|null} n2 @param {number} room
 * @returns {[number, number|null]}
 */
export function keptLengths(n1, n2, room) {
  room = Math.max(0, room);
  if (n2 === null) return [Math.min(n1, room), null];
  if (n1 + n2 <= room) return [n1, n2];
  const swap = n1 > n2;
  let [short, long] = swap ? [n2, n1] : [n1, n2];
  long = short > room ? short : Math.max(short, room - short);
  if (short + long > room) {
    short = Math.floor(room / 2);
    long = short + (room % 2);
  }
  return swap ? [long, short] : [short, long];
}
