// minilm: two sentences, made into tensors by the library's pipeline (the model's own spec: its tokenizer
// files, truncation and padding, as sentence-transformers does), embedded as a batch of two, compared by cosine.
import { client } from "../client.js";
import { el } from "../ui.js";
import { cosine, row } from "../../lib/internal.js";

export function minilmInput(model) {
  const first = el("textarea", { rows: 2, "aria-label": "first sentence", "data-testid": "sentence-a" });
  const second = el("textarea", { rows: 2, "aria-label": "second sentence", "data-testid": "sentence-b" });
  first.value = "A man is playing a guitar on the street.";
  second.value = "Someone plays an instrument outdoors.";
  return {
    element: el(
      "div",
      { class: "input minilm" },
      el("label", {}, "Sentence A ", first),
      el("label", {}, "Sentence B ", second),
    ),
    async feeds() {
      const pipeline = await client.pipeline(model.name);
      return pipeline.encode([first.value, second.value]);
    },
    describe(outputs) {
      const embedding = outputs.sentence_embedding;
      const similarity = cosine(row(embedding, 0), row(embedding, 1));
      return {
        label: `cosine similarity ${similarity.toFixed(4)}`,
        value: similarity,
        detail: `${embedding.dims[1]}-dimensional embeddings`,
      };
    },
  };
}
