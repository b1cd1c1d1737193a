"""onnxport's generation beside ONNX Runtime GenAI's on the same weights: `onnxport bench --generation`'s table with
GenAI's rows in the same rounds (docs/guide/bench.md, "Generation"; figures in docs/notes/generation-speed.md).

onnxruntime-genai 0.18 requires onnxruntime>=1.31 and onnxport pins 1.30, so GenAI lives in a venv of its own
(--genai-python; scripts/bench/genai-requirements.txt) and runs there as scripts/bench/genai_worker.py, a process
that keeps its models loaded and answers one generation per line; onnxport's side runs in this process. Rounds
alternate between the two, so that both see the same load.

The GenAI models are made once into --work from the GGUF: a Hugging Face folder (scripts/bench/hf_folder.py; the
builder's own GGUF reader takes float16/float32 files only), then GenAI's model builder at fp32 and int4 for the CPU.
onnxport's side is the decoder folder `onnxport decoder GGUF FOLDER` writes from the same GGUF; both sides are fed
the same prompt token ids.

    python3.11 -m venv /tmp/genai-venv
    /tmp/genai-venv/bin/pip install -r scripts/bench/genai-requirements.txt
    .venv/bin/onnxport decoder tests/data/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/smollm2
    .venv/bin/python scripts/bench/genai_bench.py /tmp/smollm2 tests/data/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --genai-python /tmp/genai-venv/bin/python --threads 1,2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "server"))
sys.path.insert(0, str(HERE))

from hf_folder import write_hf_folder  # noqa: E402

from onnxport.bench import generation_bench, generation_table  # noqa: E402

PRECISIONS = ("fp32", "int4")


class GenAI:
    """ONNX Runtime GenAI's side: genai_worker.py in GenAI's venv, a generation per line."""

    name = "GenAI"

    def __init__(self, python: Path, models: dict[str, Path]):
        self.variants = list(models)
        self.about = "onnxruntime-genai (version reported after its first generation)"
        self._models = models
        self._process = subprocess.Popen(
            [str(python), str(HERE / "genai_worker.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, variant: str, threads: int, prompt_ids: Sequence[int], tokens: int) -> generation_bench.Round:
        request = {"model": str(self._models[variant]), "threads": threads, "prompt_ids": list(prompt_ids)}
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps({**request, "tokens": tokens}) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"genai_worker.py ended (exit {self._process.wait()}): see its error above")
        answer = json.loads(line)
        self.about = f"onnxruntime-genai {answer['onnxruntime_genai']} on onnxruntime {answer['onnxruntime']}"
        speed = answer["steps"] / answer["decode_seconds"] if answer["decode_seconds"] > 0 else 0.0
        return generation_bench.Round(answer["prefill_ms"], speed, tuple(answer["token_ids"]))

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)


def genai_models(gguf: Path, work: Path, python: Path) -> dict[str, Path]:
    """GenAI's fp32 and int4 CPU models of the GGUF's weights, made into `work` unless there already."""
    hf = work / "hf"
    if not (hf / "model.safetensors").is_file():
        print(f"... writing the Hugging Face folder {hf}", file=sys.stderr)
        write_hf_folder(gguf, hf)
    models = {}
    for precision in PRECISIONS:
        out = work / f"genai-{precision}"
        if not (out / "genai_config.json").is_file():
            print(f"... GenAI's model builder: {precision} into {out}", file=sys.stderr)
            builder = [str(python), "-m", "onnxruntime_genai.models.builder", "-i", str(hf), "-o", str(out)]
            builder += ["-p", precision, "-e", "cpu", "-c", str(work / "cache")]
            subprocess.run(builder, check=True, stdout=subprocess.DEVNULL)
        models[precision] = out
    return models


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="onnxport's decoder folder of the GGUF (onnxport decoder)")
    parser.add_argument("gguf", type=Path, help="the GGUF file GenAI's models are built from")
    parser.add_argument("--genai-python", type=Path, required=True, help="the Python of a venv with onnxruntime-genai")
    parser.add_argument("--work", type=Path, default=Path("/tmp/onnxport-genai-bench"), help="GenAI's models, kept")
    parser.add_argument("--variants", default=",".join(generation_bench.VARIANTS), help="onnxport's variants")
    parser.add_argument("--threads", default="1", help="comma-separated thread counts, the same on both sides")
    parser.add_argument("--tokens", type=int, default=generation_bench.DEFAULT_TOKENS)
    parser.add_argument("--rounds", type=int, default=generation_bench.DEFAULT_ROUNDS)
    parser.add_argument("--prompt", default=generation_bench.DEFAULT_PROMPT)
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    genai = GenAI(args.genai_python, genai_models(args.gguf, args.work, args.genai_python))
    try:
        report = generation_bench.run_generation_bench(
            args.folder,
            variants=[v for v in args.variants.split(",") if v],
            threads=[int(n) for n in args.threads.split(",")],
            tokens=args.tokens,
            rounds=args.rounds,
            prompt=args.prompt,
            peers=[genai],
            say=lambda line: print(f"... {line}", file=sys.stderr, flush=True),
        )
    finally:
        genai.close()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(generation_table.text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
