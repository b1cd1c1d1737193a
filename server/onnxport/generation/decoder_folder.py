"""A decoder folder opened for generation: model.onnx in a session, its tokenizer, each file checked.

The folder's files (docs: the decoder convention): model.onnx, tokenizer.json, generation.json, and
chat_template.jinja where the model has one. A missing or unreadable file is a ModelFileError that names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from onnxport.errors import ModelFileError
from onnxport.generation.decoder_session import DecoderSession
from onnxport.generation.text_tokenizer import GENERATION, TOKENIZER, TextTokenizer
from onnxport.runtime import SessionSettings

MODEL = "model.onnx"


@dataclass(frozen=True)
class DecoderFolder:
    path: Path
    decoder: DecoderSession
    tokenizer: TextTokenizer

    @classmethod
    def open(
        cls,
        folder: Path | str,
        *,
        threads: int | None = None,
        model: str = MODEL,
        declared: Mapping[str, str] | None = None,
        session: SessionSettings | None = None,
    ) -> DecoderFolder:
        """The folder's decoder and tokenizer; model names another ONNX file of the folder (a variant's);
        session, where given, how its session runs (threads then ignored: a server's settings)."""
        folder = Path(folder)
        if not folder.is_dir():
            raise ModelFileError(f"{folder}: not a decoder folder (no such directory)")
        missing = [name for name in (model, TOKENIZER, GENERATION) if not (folder / name).is_file()]
        if missing:
            raise ModelFileError(f"{folder}: a decoder folder needs {', '.join(missing)}, which it lacks")
        tokenizer = TextTokenizer.from_folder(folder)
        if not tokenizer.eos_token_ids:
            raise ModelFileError(f"{folder / GENERATION}: eos_token_ids is empty: a generation would never stop")
        decoder = DecoderSession.open(folder / model, threads, declared=declared, session=session)
        vocab = decoder.vocab_size
        if vocab is not None and tokenizer.vocab_size > vocab:
            raise ModelFileError(
                f"{folder}: {TOKENIZER} has {tokenizer.vocab_size} tokens but {model}'s logits score {vocab}: "
                "they are not the same model's"
            )
        return cls(folder, decoder, tokenizer)
