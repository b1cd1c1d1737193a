"""Optimized forms of a served variant, measured side by side in this machine's Chromium.

For each variant named, writes next to each other: the artifact as built; onnxruntime's ORT format
saved at the extended level; a `.onnx` re-saved at the basic level; and, for transformer models,
onnxruntime's transformer optimizer's fused graph (BERT: Attention, SkipLayerNormalization,
BiasGelu). Each is checked natively against the artifact (max |difference| on the bench inputs),
then a plain page (onnxruntime-web's WebAssembly bundle, all threads, cross-origin isolated)
creates a session from each and times warm runs, alternating forms, in one browser.

Usage: .venv/bin/python scripts/forms_probe.py [--model minilm] [--variants fp32 int8-dynamic] [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import ort_page  # scripts/ is on the path of a script run from it

from onnxport.bench.inputs import batch_one
from onnxport.repository import testdata
from onnxport.repository.store import Repository

ROOT = Path(__file__).resolve().parent.parent


def save(source: Path, target: Path, level: ort.GraphOptimizationLevel, ort_format: bool) -> None:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.optimized_model_filepath = str(target)
    if ort_format:
        options.add_session_config_entry("session.save_model_format", "ORT")
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def transformer_fused(source: Path, target: Path, heads: int, hidden: int) -> bool:
    from onnxruntime.transformers.optimizer import optimize_model

    # opt_level 0: the fusions only, no onnxruntime graph passes baked in (those run in the browser).
    model = optimize_model(str(source), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0)
    counts = model.get_fused_operator_statistics()
    model.save_model_to_file(str(target))
    print(f"  transformer fusions: { {k: v for k, v in counts.items() if v} }")
    return any(counts.get(op) for op in ("Attention", "MultiHeadAttention", "SkipLayerNormalization"))


def native_diff(reference: Path, form: Path, feeds: dict[str, np.ndarray]) -> float:
    a = ort.InferenceSession(str(reference), providers=["CPUExecutionProvider"]).run(None, feeds)
    b = ort.InferenceSession(str(form), providers=["CPUExecutionProvider"]).run(None, feeds)
    return max(float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) for x, y in zip(a, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path, default=ROOT / "models" / ".repository")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--variants", nargs="+", default=["fp32", "int8-dynamic"])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds over the forms")
    parser.add_argument("--heads", type=int, default=12,
                        help="attention heads, for the transformer optimizer (0: detect)")
    parser.add_argument("--hidden", type=int, default=384,
                        help="hidden size, for the transformer optimizer (0: detect)")
    args = parser.parse_args()
    repo = Repository(args.repository)
    entry = repo.read_manifest()["models"][args.model]
    feeds = batch_one(entry, testdata.read_golden(repo.root, entry)[0][0])
    folder = ort_page.folder("onnxport-forms-")
    forms: list[tuple[str, str, Path]] = []
    for variant in args.variants:
        built = repo.path_of(entry["variants"][variant]["file"])
        print(f"{args.model} {variant}:")
        shutil.copy(built, folder / f"{variant}.onnx")
        forms.append((variant, "as built", folder / f"{variant}.onnx"))
        save(built, folder / f"{variant}.extended.ort", ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, True)
        forms.append((variant, "ORT format, extended", folder / f"{variant}.extended.ort"))
        save(built, folder / f"{variant}.basic.onnx", ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, False)
        forms.append((variant, ".onnx, basic", folder / f"{variant}.basic.onnx"))
        if variant == "fp32" and transformer_fused(built, folder / f"{variant}.fused.onnx", args.heads, args.hidden):
            forms.append((variant, "transformer-fused", folder / f"{variant}.fused.onnx"))
    for variant, form, path in forms:
        diff = native_diff(folder / f"{variant}.onnx", path, feeds)
        print(f"  {variant} {form}: {path.stat().st_size / 2**20:.1f} MB, native max |diff| vs as built {diff:.2e}")

    encoded = ort_page.encode(feeds)
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    with ort_page.opened(folder) as page:
        # start the backend
        page.evaluate("([f, feeds, runs]) => probe(f, feeds, runs)", [forms[0][2].name, encoded, 2])
        for _ in range(args.rounds):
            for variant, form, path in forms:
                got = page.evaluate("([f, feeds, runs]) => probe(f, feeds, runs)", [path.name, encoded, args.runs])
                slot = results.setdefault((variant, form), {"create": [], "warm": []})
                slot["create"].append(got["createMs"])
                slot["warm"].extend(got["times"])
                threads = got["threads"]
    native = {}
    for variant in args.variants:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(folder / f"{variant}.onnx"), options, providers=["CPUExecutionProvider"])
        for _ in range(3):
            session.run(None, feeds)
        times = []
        for _ in range(args.runs * 2):
            t = time.perf_counter()
            session.run(None, feeds)
            times.append((time.perf_counter() - t) * 1000)
        native[variant] = statistics.median(times)
    print(f"\n| variant | form | session create ms | warm run ms (median) "
          f"| x native {args.variants[0]} ({threads} threads) |")
    print("|---|---|---|---|---|")
    base = native[args.variants[0]]
    for (variant, form), r in results.items():
        warm = statistics.median(r["warm"])
        print(f"| {variant} | {form} | {statistics.median(r['create']):.0f} | {warm:.1f} | {warm / base:.2f}x |")
    for variant, ms in native.items():
        print(f"| {variant} | native onnxruntime, {threads} threads | | {ms:.1f} | {ms / base:.2f}x |")
    print(json.dumps({"threads": threads}))


if __name__ == "__main__":
    main()
