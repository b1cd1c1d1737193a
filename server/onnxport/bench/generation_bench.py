"""`onnxport bench --generation FOLDER`: a decoder folder's prefill time and decode speed per variant, and beside
them another runtime's on the same weights (a Peer: ONNX Runtime GenAI through scripts/bench/genai_bench.py).

Each variant file is made from the folder's model.onnx by the variants' own makers (int8-weights, int4) into a
temporary folder; the folder itself is only read. One round runs every side, variant and thread count once, in
turn, and each figure is the median over the rounds, so that load that comes and goes falls on all of them alike
and the ratios within one run compare. A round is one greedy generation through the generation loop (loop.py, what
the server runs) of exactly `tokens` new tokens from a fixed chat prompt: the end-of-sequence tokens' logits are
-inf (NoEnd), as GenAI's and transformers' min_length make them, so no variant stops sooner than another and the
greedy paths of both runtimes are comparable to the end. Prefill is the prompt's step and the first token's
choice; decode tokens/s the later tokens over their steps' time (Timing.tokens_per_second).
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np
import onnx
import onnxruntime as ort

from onnxport.bench.report_types import GenerationReport, GenerationRow
from onnxport.generation.agreement import Continuation, first_divergence, greedy_continuation
from onnxport.generation.decoder_folder import MODEL, DecoderFolder
from onnxport.generation.decoder_session import Cache, DecoderSession
from onnxport.generation.loop import Generation
from onnxport.generation.sampling import Sampling
from onnxport.generation.text_tokenizer import TextTokenizer

OURS = "onnxport"
VARIANTS = ("fp32", "int8-weights", "int4")
DEFAULT_PROMPT = "Write one sentence about the sea."
DEFAULT_TOKENS = 48
DEFAULT_ROUNDS = 5


def genai_note() -> str:
    """The table's one line when ONNX Runtime GenAI was not measured beside onnxport."""
    from importlib.util import find_spec

    if find_spec("onnxruntime_genai") is None:
        why = "onnxruntime-genai is not installed here (it requires onnxruntime>=1.31, onnxport pins 1.30)"
    else:
        why = "the bench runs it only from a venv of its own"
    return f"ONNX Runtime GenAI: not measured: {why}; scripts/bench/genai_bench.py measures it beside onnxport"


@dataclass(frozen=True)
class Round:
    """One generation's figures."""

    prefill_ms: float
    tokens_per_s: float
    token_ids: tuple[int, ...]


class Peer(Protocol):
    """Another runtime on the same weights: its name, its variants, and one generation of one of them."""

    name: str
    about: str  # what it is and on what, e.g. its version and its onnxruntime's
    variants: Sequence[str]

    def run(self, variant: str, threads: int, prompt_ids: Sequence[int], tokens: int) -> Round: ...


@dataclass(frozen=True)
class NoEnd(DecoderSession):
    """A decoder session whose end-of-sequence tokens are never the best: a generation of exactly N tokens."""

    eos: tuple[int, ...] = ()

    def step(self, ids: Sequence[int], cache: Cache) -> np.ndarray:
        logits = super().step(ids, cache)
        logits[list(self.eos)] = -np.inf
        return logits


class Ours:
    """onnxport's side: the variant files in sessions (one per variant and thread count), the folder's tokenizer."""

    name = OURS

    def __init__(self, files: dict[str, Path], tokenizer: TextTokenizer):
        self.variants: Sequence[str] = list(files)
        self.about = f"onnxruntime {ort.__version__}"
        self._files = files
        self._sessions: dict[tuple[str, int], DecoderSession] = {}
        self.tokenizer = tokenizer

    def session(self, variant: str, threads: int) -> DecoderSession:
        key = (variant, threads)
        if key not in self._sessions:
            opened = DecoderSession.open(self._files[variant], threads)
            eos = self.tokenizer.eos_token_ids
            self._sessions[key] = NoEnd(opened.session, opened.signature, opened.label, eos)
        return self._sessions[key]

    def run(self, variant: str, threads: int, prompt_ids: Sequence[int], tokens: int) -> Round:
        session = self.session(variant, threads)
        generation = Generation((session, self.tokenizer), prompt_ids, Sampling(max_new_tokens=tokens))
        with generation:
            for _ in generation:
                pass
        timing = generation.timing
        return Round(timing.first_token_seconds * 1000, timing.tokens_per_second, tuple(generation.token_ids))


def make_variants(
    folder: Path, names: Sequence[str], into: Path, say: Callable[[str], None] = print
) -> dict[str, Path]:
    """The variant files, by name: fp32 is the folder's model.onnx; the others are made by their makers into `into`."""
    from onnxport.convert import lower_precision

    makers = {"int8-weights": lower_precision.make_int8_weights, "int4": lower_precision.make_int4}
    unknown = [n for n in names if n != "fp32" and n not in makers]
    if unknown:
        raise ValueError(f"variant {unknown[0]!r}: expected some of {', '.join(VARIANTS)}")
    fp32 = folder / MODEL
    files: dict[str, Path] = {"fp32": fp32} if "fp32" in names else {}
    source = onnx.load(str(fp32)) if set(names) - {"fp32"} else onnx.ModelProto()
    for name in names:
        if name != "fp32":
            say(f"making {name} from {fp32}")
            made, _ = makers[name](source)
            files[name] = into / f"model.{name}.onnx"
            onnx.save(made, str(files[name]))
    return files


def chat_prompt_ids(tokenizer: TextTokenizer, prompt: str) -> list[int]:
    """The prompt as the server sends a one-message chat (or as plain text, without a chat template)."""
    if tokenizer.template is None:
        return tokenizer.encode(prompt)
    return tokenizer.encode(tokenizer.chat_prompt([{"role": "user", "content": prompt}]), add_special_tokens=False)


def run_generation_bench(
    folder: Path,
    *,
    variants: Sequence[str] = VARIANTS,
    threads: Sequence[int] = (1,),
    tokens: int = DEFAULT_TOKENS,
    rounds: int = DEFAULT_ROUNDS,
    prompt: str = DEFAULT_PROMPT,
    peers: Sequence[Peer] = (),
    peer_note: str = "",
    say: Callable[[str], None] = print,
) -> GenerationReport:
    """Every side's variants at every thread count, a warm-up generation each first, then `rounds` rounds.
    peer_note: the line the report gives when no peer was measured (why not)."""
    from onnxport.bench.bench_run import machine

    folder = Path(folder)
    opened = DecoderFolder.open(folder, threads=1)  # the folder's files checked, its tokenizer read
    prompt_ids = chat_prompt_ids(opened.tokenizer, prompt)
    with tempfile.TemporaryDirectory(prefix="onnxport-generation-bench-") as scratch:
        ours = Ours(make_variants(folder, variants, Path(scratch), say), opened.tokenizer)
        sides: list[Peer] = [ours, *peers]
        plan = [(side, variant, n) for n in threads for side in sides for variant in side.variants]
        say(f"warm-up: {len(plan)} generations of {tokens} tokens")
        for side, variant, n in plan:
            side.run(variant, n, prompt_ids, tokens)
        measured: dict[int, list[Round]] = {i: [] for i in range(len(plan))}
        for r in range(rounds):
            say(f"round {r + 1} of {rounds}")
            for i, (side, variant, n) in enumerate(plan):
                measured[i].append(side.run(variant, n, prompt_ids, tokens))
        # fp32's own greedy path with its two best logits a step: where another row's tokens part from it, the
        # near-tie rule (generation/agreement.py) tells a rounding's flip of a near tie from a change of text.
        reference = None
        if "fp32" in ours.variants:
            reference = greedy_continuation(ours.session("fp32", threads[0]), ours.tokenizer, prompt_ids, tokens)
    rows = [_row(side.name, variant, n, measured[i], reference) for i, (side, variant, n) in enumerate(plan)]
    return {
        "schema": "onnxport.bench.generation",
        "schema_version": 1,
        "machine": machine(),
        "folder": str(folder),
        "prompt": prompt,
        "prompt_tokens": len(prompt_ids),
        "tokens": tokens,
        "rounds": rounds,
        "rows": rows,
        "peers": {p.name: p.about for p in peers},
        "peer_note": peer_note if not peers else "",
    }


def _row(side: str, variant: str, threads: int, rounds: list[Round], reference: Continuation | None) -> GenerationRow:
    tokens = list(rounds[0].token_ids)
    parted = gap = None
    if reference is not None:
        parted = next((i for i, (a, b) in enumerate(zip(reference.tokens, tokens)) if a != b), None)
        if parted is not None:
            best, second = reference.step_logits[parted]
            gap = round(float(best) - float(second), 4)
    return {
        "runtime": side,
        "variant": variant,
        "threads": threads,
        "prefill_ms": round(statistics.median(r.prefill_ms for r in rounds), 2),
        "tokens_per_s": round(statistics.median(r.tokens_per_s for r in rounds), 2),
        "token_ids": tokens,
        "parted_at": None if parted is None else parted + 1,
        "fp32_gap": gap,
        "same_as_fp32": None
        if reference is None
        else first_divergence(reference.tokens, list(reference.step_logits), tokens) is None,
    }
