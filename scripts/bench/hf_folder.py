"""A GGUF file as a Hugging Face folder (config.json, model.safetensors, tokenizer files), for ONNX Runtime GenAI's
model builder, which reads such a folder (its own GGUF reader takes float16/float32 files only, not Q4_1).

transformers loads the GGUF (dequantized to float32) but refuses save_pretrained for a GGUF-loaded model, so the
files are written here by hand: the config as transformers holds it, the state dict through safetensors (a tied
lm_head.weight is the embedding's tensor, which safetensors will not store twice: it is left out, as
save_pretrained leaves it out, and tie_word_embeddings says so), the tokenizer through its own save_pretrained.

    .venv/bin/python scripts/bench/hf_folder.py tests/data/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/smollm2-hf
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))


def write_hf_folder(gguf: Path, folder: Path) -> Path:
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    from onnxport.convert.decoder.gguf_source import load_causal_lm

    model = load_causal_lm(gguf)
    folder.mkdir(parents=True, exist_ok=True)
    config = model.config
    described = config.to_dict()
    # The weights written are float32: no GGUF quantization is left for a reader to honour.
    described.pop("quantization_config", None)
    described.update(architectures=[type(model).__name__], dtype="float32")
    (folder / "config.json").write_text(json.dumps(described, indent=2) + "\n", encoding="utf-8")
    state = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
    if config.tie_word_embeddings and "lm_head.weight" in state:
        del state["lm_head.weight"]
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    if model.generation_config is not None:
        model.generation_config.save_pretrained(str(folder))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.save_pretrained(str(folder))
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf", type=Path)
    parser.add_argument("folder", type=Path, help="the Hugging Face folder to write")
    args = parser.parse_args()
    write_hf_folder(args.gguf, args.folder)
    print(f"wrote {args.folder}: {', '.join(sorted(p.name for p in args.folder.iterdir()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
