"""`onnxport decoder`: a GGUF file made into a checked decoder folder, which `onnxport serve` generates with
(the `generation_models` setting).

The folder is written beside its target under a temporary name and renamed into place once the export has
matched the source model step by step, so a failed or interrupted run leaves nothing at the target.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from onnxport.convert.intake.request import readable
from onnxport.errors import BuildError, UsageError

DEFAULT_PROMPT = "Write one sentence about the sea."


def add_parser(sub, common) -> None:
    command = sub.add_parser(
        "decoder",
        parents=[common],
        help="write a decoder folder (model.onnx with a KV cache, tokenizer.json, chat template) from a GGUF file, "
        "checked step by step against the model transformers loads from it",
    )
    command.add_argument("gguf", type=Path, metavar="GGUF", help="a GGUF file of a decoder-only language model")
    command.add_argument("folder", type=Path, metavar="FOLDER", help="the decoder folder to write (must not exist)")
    command.add_argument(
        "--prompt",
        default=DEFAULT_PROMPT,
        help="the user message the check runs through the chat template (or as plain text without one)",
    )
    command.add_argument("--steps", type=int, default=8, help="cached steps checked after the prompt (default 8)")
    command.set_defaults(handler=decoder)


def decoder(args: argparse.Namespace) -> int:
    readable("GGUF", args.gguf, "file")
    if args.gguf.suffix.lower() != ".gguf":
        raise UsageError(f"GGUF {args.gguf}: expected a .gguf file, got {args.gguf.suffix or 'no extension'}")
    target: Path = args.folder
    if target.exists():
        raise UsageError(f"FOLDER {target}: already exists; remove it or name a new folder")
    if not target.parent.is_dir():
        raise UsageError(f"FOLDER {target}: the folder {target.parent} does not exist; create it first")
    if args.steps < 1:
        raise UsageError(f"--steps {args.steps}: expected at least 1")

    from onnxport.convert.decoder import gguf_folder, gguf_source

    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        try:
            built = gguf_folder.build_decoder_folder(args.gguf, partial, prompt=args.prompt, steps=args.steps)
        except ModuleNotFoundError:
            raise  # an extra not installed: cli/__init__.py names it
        except Exception as exc:  # transformers' refusals of a file (a truncated header, an unknown architecture)
            raise BuildError(f"GGUF {args.gguf}: {type(exc).__name__}: {exc}") from exc
        partial.rename(target)
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
    shape, check = built.shape, built.check
    size = (target / gguf_source.MODEL_FILE).stat().st_size
    print(
        f"wrote {target}: {shape.layers} layers, {shape.kv_heads} key/value heads of {shape.head_dim}, vocabulary "
        f"{shape.vocab}; model.onnx {size / 1e6:.1f} MB, exported in {built.export_seconds:.1f} s; the prompt "
        f"({len(built.prompt_ids)} tokens) and {len(check.steps) - 1} cached steps match the source within "
        f"{check.max_abs_diff:.2g} (largest logit difference)"
    )
    print(f"serve it: ONNXPORT_GENERATION_MODELS={target.name}={target} onnxport serve")
    return 0


def add_bench_options(bench: argparse.ArgumentParser) -> None:
    """`onnxport bench --generation FOLDER`'s options (bench/generation_bench.py)."""
    bench.add_argument(
        "--generation",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="measure a decoder folder's generation instead (prefill ms, decode tokens/s per variant); "
        "no repository, server or browser",
    )
    bench.add_argument(
        "--variants", default="fp32,int8-weights,int4", help="with --generation: the variants to make and measure"
    )
    bench.add_argument("--threads", default="1", help="with --generation: comma-separated thread counts (default 1)")
    bench.add_argument("--tokens", type=int, default=48, help="with --generation: greedy tokens per round (default 48)")
    bench.add_argument("--prompt", default=DEFAULT_PROMPT, help="with --generation: the chat prompt's user message")


def bench_generation(args: argparse.Namespace) -> int:
    import json
    import sys

    from onnxport.bench import generation_bench, generation_table
    from onnxport.cli.option_checks import writable_output

    readable("--generation", args.generation, "folder")
    writable_output("--json", args.json)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in generation_bench.VARIANTS]
    if not variants or unknown:
        raise UsageError(f"--variants {args.variants!r}: expected some of {', '.join(generation_bench.VARIANTS)}")
    threads = [int(n) for n in args.threads.split(",") if n.strip().isdigit() and int(n) >= 1]
    if not threads or len(threads) != len(args.threads.split(",")):
        raise UsageError(f"--threads {args.threads!r}: expected thread counts of at least 1, e.g. 1,2")
    rounds = generation_bench.DEFAULT_ROUNDS if args.runs is None else args.runs
    if rounds < 1 or args.tokens < 2:
        raise UsageError("--runs: expected at least 1; --tokens: at least 2 (decode speed needs a second token)")
    report = generation_bench.run_generation_bench(
        args.generation,
        variants=variants,
        threads=threads,
        tokens=args.tokens,
        rounds=rounds,
        prompt=args.prompt,
        peer_note=generation_bench.genai_note(),
        say=lambda line: print(f"... {line}", file=sys.stderr, flush=True),
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(generation_table.text(report))
    return 0
