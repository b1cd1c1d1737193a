// minilm: two sentences, tokenized here by @huggingface/tokenizers from the model's own
// tokenizer files, embedded as a batch of two, compared by cosine similarity.
import { Tokenizer } from "@huggingface/tokenizers";
import { client } from "../client.js";
import { el } from "../ui.js";
import { tensor } from "../../lib/index.js";
import { cosine, row } from "../../lib/internal.js";

const MAX_TOKENS = 128;

async function loadTokenizer(model) {
  const files = {};
  for (const name of ["tokenizer.json", "tokenizer_config.json"]) {
    const asset = model.assets?.[name];
    if (!asset) throw new Error(`${model.name} publishes no ${name}`);
    const response = await fetch(client.fileUrl(asset.file));
    if (!response.ok) throw new Error(`GET ${asset.file}: HTTP ${response.status}`);
    files[name] = await response.json();
  }
  return new Tokenizer(files["tokenizer.json"], files["tokenizer_config.json"]);
}

export function minilmInput(model) {
  const first = el("textarea", { rows: 2, "aria-label": "first sentence", "data-testid": "sentence-a" });
  const second = el("textarea", { rows: 2, "aria-label": "second sentence", "data-testid": "sentence-b" });
  first.value = "A man is playing a guitar on the street.";
  second.value = "Someone plays an instrument outdoors.";
  const tokenizer = loadTokenizer(model);
  return {
    element: el("div", { class: "input minilm" }, el("label", {}, "Sentence A ", first), el("label", {}, "Sentence B ", second)),
    async feeds() {
      const tok = await tokenizer;
      const encoded = [first.value, second.value].map((text) => tok.encode(text).ids.slice(0, MAX_TOKENS));
      const length = Math.max(...encoded.map((ids) => ids.length));
      const ids = new BigInt64Array(2 * length);
      const mask = new BigInt64Array(2 * length);
      encoded.forEach((tokens, r) => tokens.forEach((id, c) => {
        ids[r * length + c] = BigInt(id);
        mask[r * length + c] = 1n;
      }));
      return { input_ids: tensor("int64", [2, length], ids), attention_mask: tensor("int64", [2, length], mask) };
    },
    describe(outputs) {
      const embedding = outputs.sentence_embedding;
      const similarity = cosine(row(embedding, 0), row(embedding, 1));
      return { label: `cosine similarity ${similarity.toFixed(4)}`, value: similarity, detail: `${embedding.dims[1]}-dimensional embeddings` };
    },
  };
}
