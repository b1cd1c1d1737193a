"""ONNX Runtime GenAI's side of the generation bench, run by the Python of GenAI's own venv (onnxruntime-genai 0.18
requires onnxruntime>=1.31, onnxport pins 1.30: they cannot share one). It imports nothing of onnxport.

A line of JSON on stdin is one generation, a line of JSON on stdout its figures; models stay loaded between lines
(one og.Model per folder and thread count), so that rounds can alternate with onnxport's in the caller:

    {"model": "/tmp/genai-fp32", "threads": 1, "prompt_ids": [1, 2, 3], "tokens": 48}
    -> {"prefill_ms": 95.1, "decode_seconds": 1.9, "steps": 47, "token_ids": [...], "onnxruntime": "1.32.0"}

Greedy search (do_sample false), exactly `tokens` new tokens: min_length = max_length makes the end-of-sequence
logits -inf until the last token, as onnxport's side does (bench/generation_bench.py NoEnd). Timing mirrors
onnxport's generation loop: the prefill is append_tokens (the prompt's forward pass) plus the choice of the first
token; each later generate_next_token is one decode step (one token's forward pass and its choice).
"""

from __future__ import annotations

import json
import sys
import time
from importlib import metadata


def main() -> int:
    import onnxruntime_genai as og

    models: dict[tuple[str, int], object] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        key = (request["model"], int(request["threads"]))
        if key not in models:
            config = og.Config(key[0])
            options = {"intra_op_num_threads": key[1], "inter_op_num_threads": 1}
            config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
            models[key] = og.Model(config)
        print(json.dumps(generate(og, models[key], request["prompt_ids"], int(request["tokens"]))), flush=True)
    return 0


def generate(og, model, prompt_ids: list[int], tokens: int) -> dict:
    params = og.GeneratorParams(model)
    length = len(prompt_ids) + tokens
    params.set_search_options(do_sample=False, max_length=length, min_length=length, batch_size=1)
    generator = og.Generator(model, params)
    start = time.perf_counter()
    generator.append_tokens(prompt_ids)
    generator.generate_next_token()
    prefill = time.perf_counter() - start
    token_ids = [int(generator.get_next_tokens()[0])]
    decode = 0.0
    while not generator.is_done() and len(token_ids) < tokens:
        step = time.perf_counter()
        generator.generate_next_token()
        decode += time.perf_counter() - step
        token_ids.append(int(generator.get_next_tokens()[0]))
    del generator
    return {
        "prefill_ms": round(prefill * 1000, 3),
        "decode_seconds": decode,
        "steps": len(token_ids) - 1,
        "token_ids": token_ids,
        "onnxruntime": metadata.version("onnxruntime"),
        "onnxruntime_genai": og.__version__,
    }


if __name__ == "__main__":
    sys.exit(main())
