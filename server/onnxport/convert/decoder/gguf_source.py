"""A GGUF file as a transformers causal language model, and the tokenizer files a decoder folder carries.

transformers reads GGUF itself (`gguf_file=`): it dequantizes the weights (Q4_1 blocks and the like) to
float32 and rebuilds the tokenizer from the file's metadata, the chat template (`tokenizer.chat_template`)
and the special ids (`tokenizer.ggml.eos_token_id`, `bos_token_id`) included. A decoder folder holds
`model.onnx`, `tokenizer.json` (the `tokenizers` library's JSON), `chat_template.jinja` when the model has
one, and `generation.json` ({"eos_token_ids": [...], "bos_token_id": int or null}).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedModel

TOKENIZER_FILE = "tokenizer.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
GENERATION_FILE = "generation.json"
MODEL_FILE = "model.onnx"


@dataclass(frozen=True)
class TokenizerAssets:
    """What write_tokenizer_assets wrote: the tokenizer's size, its special ids and whether a template came."""

    vocab_size: int
    eos_token_ids: list[int]
    bos_token_id: int | None
    chat_template: bool


def _require(gguf: Path) -> None:
    if not gguf.is_file():
        raise FileNotFoundError(f"GGUF file {gguf}: expected a file, found nothing")


def load_causal_lm(gguf: Path) -> PreTrainedModel:
    """The GGUF's model in transformers, float32, eval mode, eager attention (what the export traces)."""
    _require(gguf)
    from transformers import AutoModelForCausalLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # transformers' notes about dequantizing GGUF weights
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype="float32", attn_implementation="eager"
        )
    return model.eval()


def write_tokenizer_assets(gguf: Path, folder: Path) -> TokenizerAssets:
    """Writes tokenizer.json, chat_template.jinja (when the GGUF has one) and generation.json into `folder`."""
    _require(gguf)
    from transformers import AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.backend_tokenizer.save(str(folder / TOKENIZER_FILE))
    # transformers took these from the GGUF's metadata: tokenizer.chat_template, tokenizer.ggml.*_token_id.
    template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else ""
    if template:
        (folder / CHAT_TEMPLATE_FILE).write_text(template, encoding="utf-8")
    eos, bos = tokenizer.eos_token_id, tokenizer.bos_token_id
    assets = TokenizerAssets(
        vocab_size=len(tokenizer),
        eos_token_ids=[int(eos)] if isinstance(eos, int) else [],
        bos_token_id=int(bos) if isinstance(bos, int) else None,
        chat_template=bool(template),
    )
    if not assets.eos_token_ids:
        raise ValueError(f"GGUF file {gguf}: expected tokenizer.ggml.eos_token_id in its metadata, found none")
    generation = {"eos_token_ids": assets.eos_token_ids, "bos_token_id": assets.bos_token_id}
    (folder / GENERATION_FILE).write_text(json.dumps(generation, indent=2) + "\n", encoding="utf-8")
    return assets
