"""The generation settings (issue 46): which decoder models are served, and the budgets every generation
request is held to. table.py appends these rows to SETTINGS."""

from __future__ import annotations

from onnxport.serving.config.setting import Setting
from onnxport.serving.config.values import model_folder_map, model_folders, positive, timeout

GENERATION_SETTINGS = [
    Setting(
        "generation_models",
        {},
        model_folders,
        "Decoder models served for generation (Triton's generate extension and the OpenAI API under /v1/): "
        "name=folder pairs, comma-separated (a JSON object in the config file), each folder holding model.onnx, "
        "tokenizer.json and generation.json; opened at start, and a folder that is not one stops the server "
        "with one line naming it. Default: none.",
        check=model_folder_map,
    ),
    Setting(
        "generation_max_new_tokens",
        256,
        positive,
        "Most tokens one generation request may ask for (max_tokens); more gets HTTP 400 naming the limit. A "
        "request that names none gets this many, or what generation_max_context leaves.",
        check=positive,
    ),
    Setting(
        "generation_max_context",
        2048,
        positive,
        "Most tokens of one generation, prompt and new tokens together (the KV cache's length); a request over "
        "it gets HTTP 400 naming the limit and its prompt's and max_tokens' counts.",
        check=positive,
    ),
    Setting(
        "generation_max_concurrent",
        2,
        positive,
        "Most generations running at once (each holds a KV cache and a core); one more gets HTTP 429 naming "
        "the limit, at once rather than queued.",
        check=positive,
    ),
    Setting(
        "generation_time_limit",
        60.0,
        timeout,
        "Seconds one generation may run; then it ends where it is, answered whole with what it made: finish "
        'reason "time" on the generate extension, "length" on the OpenAI API (whose reasons are stop and length).',
        check=timeout,
    ),
]
