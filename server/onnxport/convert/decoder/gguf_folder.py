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


def encode(folder: Path, text: str) -> list[int]:
    """`text` as the folder's tokenizer.json encodes it."""
    from tokenizers import Tokenizer

    return list(Tokenizer.from_file(str(folder / gguf_source.TOKENIZER_FILE)).encode(text).ids)


def chat_prompt(folder: Path, message: str) -> str:
    """One user message through the folder's chat_template.jinja, ready for the assistant's answer."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    template_path = folder / gguf_source.CHAT_TEMPLATE_FILE
    if not template_path.is_file():
        raise FileNotFoundError(f"decoder folder {folder}: expected {template_path.name} for a chat prompt, found none")
    # A template is data from the model's file: sandboxed, as transformers renders it.
    template = ImmutableSandboxedEnvironment().from_string(template_path.read_text(encoding="utf-8"))
    return template.render(messages=[{"role": "user", "content": message}], add_generation_prompt=True)


def build_decoder_folder(
    gguf: Path, folder: Path, *, prompt: str, chat: bool | None = None, steps: int = 8, tolerance: float = TOLERANCE
) -> DecoderBuild:
    """Writes `folder` (model.onnx, tokenizer.json, chat_template.jinja, generation.json) from `gguf`. The
    prompt goes through the chat template when `chat`, by default when the GGUF has one."""
    assets = gguf_source.write_tokenizer_assets(gguf, folder)
    use_chat = assets.chat_template if chat is None else chat
    prompt_ids = encode(folder, chat_prompt(folder, prompt) if use_chat else prompt)
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
