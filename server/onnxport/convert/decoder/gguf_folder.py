"""A decoder folder from a GGUF file: tokenizer files, the KV-cache export, and its step-by-step check.

The check runs a prompt (its text encoded by the folder's own tokenizer.json; with `chat`, a user's message
put through the folder's chat template) and `steps` cached steps against the transformers model the GGUF
loads into; an export that drifts raises StepMismatch and leaves no model.onnx behind.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from onnxport.convert.decoder import gguf_source
from onnxport.convert.decoder.export import CacheShape, export_decoder
from onnxport.convert.decoder.steps import TOLERANCE, StepCheck, check_steps
from onnxport.generation.text_tokenizer import TextTokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass(frozen=True)
class DecoderBuild:
    folder: Path
    shape: CacheShape
    export_seconds: float
    check: StepCheck
    prompt_ids: list[int]  # the check's prompt, as fed
    source: PreTrainedModel  # the float32 transformers model the file was checked against


def build_decoder_folder(
    gguf: Path, folder: Path, *, prompt: str, chat: bool | None = None, steps: int = 8, tolerance: float = TOLERANCE
) -> DecoderBuild:
    """Writes `folder` (model.onnx, tokenizer.json, chat_template.jinja, generation.json) from `gguf`. The
    prompt goes through the chat template when `chat`, by default when the GGUF has one."""
    assets = gguf_source.write_tokenizer_assets(gguf, folder)
    use_chat = assets.chat_template if chat is None else chat
    # Tokenized as the server tokenizes a request (serving/generate/runs.py), from the files just written.
    tokenizer = TextTokenizer.from_folder(folder)
    if use_chat:
        rendered = tokenizer.chat_prompt([{"role": "user", "content": prompt}])
        prompt_ids = tokenizer.encode(rendered, add_special_tokens=False)  # the template wrote the special tokens
    else:
        prompt_ids = tokenizer.encode(prompt)
    model = gguf_source.load_causal_lm(gguf)
    target = folder / gguf_source.MODEL_FILE
    started = time.perf_counter()
    shape = export_decoder(model, target)
    seconds = time.perf_counter() - started
    try:
        check = check_steps(model, target, prompt_ids, steps, tolerance=tolerance, label=str(gguf))
    except Exception:
        target.unlink()
        raise
    return DecoderBuild(
        folder=folder, shape=shape, export_seconds=seconds, check=check, prompt_ids=prompt_ids, source=model
    )
