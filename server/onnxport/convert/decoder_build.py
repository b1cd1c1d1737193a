"""Decoder recipes into the repository: a GGUF file made a checked fp32 decoder, its weight-only variants made
and judged against it by what they generate, all staged and committed in one transaction.

fp32 is convert/decoder/'s folder (the export checked step by step against the source). Each variant is the
file the other models' variant of that name would be (int8-weights: convert/int8/weights.py; int4:
convert/variants/int4.py), judged by generation/agreement.py on the recipe's prompts and held-out text against
the GENERATION budget (accuracy/budgets.py): within it served, else over budget with the reason.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, cast

import onnx

from onnxport.accuracy import budgets
from onnxport.accuracy.measured import GenerationMeasurement
from onnxport.convert.decoder import gguf_source
from onnxport.convert.decoder.gguf_folder import build_decoder_folder
from onnxport.convert.decoder.steps import TOLERANCE
from onnxport.convert.int8.weights import make_int8_weights
from onnxport.convert.intake.sources import build_key
from onnxport.convert.intake.tools import tool_versions
from onnxport.convert.variants.int4 import make_int4
from onnxport.errors import BuildError, OnnxportError, RecipeError, VariantSkipped
from onnxport.generation import agreement, golden
from onnxport.generation.decoder_folder import MODEL, DecoderFolder
from onnxport.progress import Steps
from onnxport.recipe import DecoderRecipe
from onnxport.repository import decoder_record
from onnxport.repository.decoder_record import (
    DecoderCheck,
    DecoderEntry,
    DecoderFile,
    DecoderProvenance,
    DecoderVariant,
    Judged,
)
from onnxport.repository.store import Repository, Transaction, sha256_file
from onnxport.repository.variant_record import Settings

Progress = Callable[[str], None]
Maker = Callable[[onnx.ModelProto], tuple[onnx.ModelProto, Settings]]
MAKERS: dict[str, Maker] = {"int8-weights": make_int8_weights, "int4": make_int4}
# golden.json: fp32's greedy continuations of the prompts, which check and the browser hold a runtime to.
ASSETS = (gguf_source.TOKENIZER_FILE, gguf_source.GENERATION_FILE, gguf_source.CHAT_TEMPLATE_FILE, golden.GOLDEN_FILE)
DECODER_FORMAT = 2  # bump when the build changes what it writes for the same recipe and GGUF


@dataclass
class DecoderOutcome:
    name: str
    skipped: bool
    entry: DecoderEntry
    seconds: float


def checked_gguf(recipe: DecoderRecipe) -> Path:
    """The recipe's GGUF file, or a RecipeError naming the recipe and the file."""
    path = recipe.gguf_path
    if not path.is_file():
        where = f" ({recipe.path})" if recipe.path else ""
        raise RecipeError(
            f"decoder recipe {recipe.name!r}{where}: GGUF file {path}: expected a file, found nothing"
            + ("; `make testdata` fetches SmolLM2's" if "smollm2" in path.name.lower() else "")
        )
    return path


def held_out_text(recipe: DecoderRecipe) -> str:
    try:
        text = recipe.held_out()
    except Exception as exc:  # the recipe author's code
        raise RecipeError(f"decoder recipe {recipe.name!r}: held_out() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(text, str) or not text.strip():
        raise RecipeError(f"decoder recipe {recipe.name!r}: held_out() must return non-empty text, got {text!r:.60}")
    return text


def decoder_key(recipe: DecoderRecipe, gguf_sha256: str, text: str) -> str:
    return build_key(
        {
            "decoder_format": DECODER_FORMAT,
            "recipe_sha256": recipe.source_sha256(),
            "gguf_sha256": gguf_sha256,
            "text_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "variants": list(recipe.variants),  # `--variants` may narrow the recipe's
        }
    )


def build_decoders(
    recipes: Sequence[DecoderRecipe], repository: Repository, *, force: bool = False, show_progress: bool = True
) -> list[DecoderOutcome]:
    """Each recipe's entry under the manifest's `decoders`, one transaction for all; a recipe whose key is built
    already is skipped (unless `force`)."""
    inputs = [(r, checked_gguf(r), held_out_text(r)) for r in recipes]  # every recipe's errors before any work
    outcomes = []
    with repository.transaction() as transaction:
        manifest = repository.read_manifest()
        decoders = manifest.setdefault("decoders", {})
        for recipe, gguf, text in inputs:
            started = time.perf_counter()
            gguf_sha = sha256_file(gguf)
            key = decoder_key(recipe, gguf_sha, text)
            current = decoders.get(recipe.name)
            if (
                not force
                and current
                and current["build_key"] == key
                and all(repository.path_of(f).exists() for f in decoder_record.files(current))
            ):
                outcomes.append(DecoderOutcome(recipe.name, True, current, 0.0))
                continue
            with Steps(recipe.name, 3 + len(recipe.variants), enabled=show_progress) as steps:
                try:
                    entry = build_decoder(recipe, gguf, gguf_sha, key, text, transaction, steps.step)
                except OnnxportError:
                    raise
                except Exception as exc:
                    raise BuildError(f"{recipe.name}: {steps.label} failed: {type(exc).__name__}: {exc}") from exc
            decoders[recipe.name] = entry
            outcomes.append(DecoderOutcome(recipe.name, False, entry, round(time.perf_counter() - started, 1)))
        if any(not o.skipped for o in outcomes):
            transaction.commit(manifest)
    return outcomes


def build_decoder(
    recipe: DecoderRecipe,
    gguf: Path,
    gguf_sha256: str,
    key: str,
    text: str,
    transaction: Transaction,
    step: Progress,
) -> DecoderEntry:
    with tempfile.TemporaryDirectory(prefix="onnxport-decoder-") as tmp:
        folder = Path(tmp) / "fp32"
        step("export fp32 and check it against the GGUF")
        built = build_decoder_folder(gguf, folder, prompt=recipe.prompts[0], chat=recipe.chat, steps=recipe.check_steps)
        check: DecoderCheck = {
            "steps": len(built.check.steps),
            "max_abs": float(built.check.max_abs_diff),
            "tolerance": TOLERANCE,
        }
        del built  # the transformers model it holds: the variants need the memory
        provenance: DecoderProvenance = {
            "recipe": str(recipe.path) if recipe.path else recipe.name,
            "recipe_sha256": recipe.source_sha256() or hashlib.sha256(b"").hexdigest(),
            "gguf": gguf.name,
            "gguf_sha256": gguf_sha256,
            "tools": tool_versions(),
        }
        return entry_from_folder(recipe, folder, key, text, check, provenance, transaction, step)


def entry_from_folder(
    recipe: DecoderRecipe,
    folder: Path,
    key: str,
    text: str,
    check: DecoderCheck,
    provenance: DecoderProvenance,
    transaction: Transaction,
    step: Progress,
    budget: budgets.GenerationBudget = budgets.GENERATION,
) -> DecoderEntry:
    """The entry of a checked decoder folder: its variants made, judged and staged with its tokenizer files."""
    variants, judged = judge_variants(
        folder,
        recipe.prompts,
        text,
        recipe.new_tokens,
        recipe.variants,
        transaction,
        step,
        chat=recipe.chat,
        budget=budget,
    )
    step("stage the tokenizer files")
    assets: dict[str, DecoderFile] = {
        name: {**transaction.put_file((folder / name).read_bytes(), name.rsplit(".", 1)[-1]), "name": name}
        for name in ASSETS
        if (folder / name).is_file()
    }
    return {
        "name": recipe.name,
        "description": recipe.description,
        "task": "generation",
        "kind": "gguf",
        "build_key": key,
        "provenance": provenance,
        "check": check,
        "judged_on": judged,
        "budget": budget,
        "default_variant": default_variant(variants),
        "assets": assets,
        "variants": variants,
    }


def judge_variants(
    folder: Path,
    prompts: Sequence[str],
    text: str,
    new_tokens: int,
    names: Sequence[str],
    transaction: Transaction,
    step: Progress,
    *,
    chat: bool = True,
    budget: budgets.GenerationBudget = budgets.GENERATION,
) -> tuple[dict[str, DecoderVariant], Judged]:
    """fp32 (the folder's model.onnx) and each named variant, staged in `transaction` and judged against fp32."""
    started = time.perf_counter()
    fp32_bytes = (folder / MODEL).read_bytes()
    fp32 = DecoderFolder.open(folder)
    tokenizer = fp32.tokenizer
    # fp32's continuations once, fed as the server feeds them; every variant is held to them
    references = [
        agreement.greedy_continuation(fp32.decoder, tokenizer, golden.prompt_ids(tokenizer, p, chat=chat), new_tokens)
        for p in prompts
    ]
    reference_file = golden.golden(tokenizer, prompts, references, chat=chat, new_tokens=new_tokens)
    (folder / golden.GOLDEN_FILE).write_text(json.dumps(reference_file, ensure_ascii=False))
    variants: dict[str, DecoderVariant] = {
        "fp32": {
            **transaction.put_file(fp32_bytes, "onnx"),
            "size_ratio": 1.0,
            "settings": {},
            "seconds": round(time.perf_counter() - started, 1),
            "status": "ok",
            "reason": None,
        }
    }
    model = onnx.load(str(folder / MODEL))
    for name in names:
        step(name)
        started = time.perf_counter()
        try:
            made, settings = MAKERS[name](model)
        except VariantSkipped as exc:
            variants[name] = {"status": "skipped", "reason": str(exc)}
            continue
        except Exception as exc:  # a converter's crash: this variant fails, the others go on
            variants[name] = {"status": "rejected", "reason": f"{name} failed: {type(exc).__name__}: {exc}"}
            continue
        data = made.SerializeToString()
        (folder / f"{name}.onnx").write_bytes(data)
        del made
        try:
            candidate = DecoderFolder.open(folder, model=f"{name}.onnx")
            metrics = agreement.measure(
                fp32.decoder, candidate.decoder, tokenizer, prompts, text, new_tokens, references=references
            )
        except Exception as exc:  # onnxruntime would not load or run it
            variants[name] = {"status": "rejected", "reason": f"{name} does not run: {type(exc).__name__}: {exc}"}
            continue
        finally:
            (folder / f"{name}.onnx").unlink()
        measured = rounded(metrics)
        broken = [k for k, v in measured.items() if isinstance(v, float) and not math.isfinite(v)]
        if broken:  # JSON has no NaN: a variant whose logits are not finite is failed, not measured
            variants[name] = {"status": "rejected", "reason": f"{name}: not finite: {', '.join(broken)}"}
            continue
        reason = budgets.generation_shortfall(measured, budget)
        record = {
            **transaction.put_file(data, "onnx"),
            "size_ratio": round(len(data) / len(fp32_bytes), 4),
            "settings": settings,
            "seconds": round(time.perf_counter() - started, 1),
            "generation": measured,
            "status": "ok" if reason is None else "rejected",
            "reason": reason,
        }
        variants[name] = cast(DecoderVariant, record)
    judged: Judged = {
        "prompts": list(prompts),
        "new_tokens": new_tokens,
        "text_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "text_tokens": len(tokenizer.encode(text)),
        "chat": chat,
    }
    return variants, judged


def rounded(metrics: agreement.GenerationMetrics) -> GenerationMeasurement:
    def r(value: float) -> float:
        return round(float(value), 6)

    divergence = metrics["mean_first_divergence"]
    return {
        "prompts": metrics["prompts"],
        "new_tokens": metrics["new_tokens"],
        "greedy_equal_share": r(metrics["greedy_equal_share"]),
        "mean_first_divergence": None if divergence is None else r(divergence),
        "first_divergences": list(metrics["first_divergences"]),
        "text_tokens": metrics["text_tokens"],
        "top1_agreement": r(metrics["top1_agreement"]),
        "nll_reference": r(metrics["nll_reference"]),
        "nll_candidate": r(metrics["nll_candidate"]),
        "nll_change": r(metrics["nll_change"]),
    }


def default_variant(variants: dict[str, DecoderVariant]) -> str:
    """The smallest served variant: what a request naming only the model is served."""
    served = [(v["bytes"], name) for name, v in variants.items() if decoder_record.made(v) and v["status"] == "ok"]
    return min(served)[1]
