"""The int4 variant in a grid of forms (convert/variants/int4.py Form), each judged and timed side by side.

    PYTHONPATH=server .venv/bin/python scripts/bench/int4_forms.py [--repository models/.repository] [--model minilm]
        [--forms b16-zp-a4-t4 b32-zp-a4-t4 ...] [--rounds 3] [--threads 1 2] [--runtimes native wasm webgpu]
        [--extra NAME=FILE ...] [--folder DIR] [--json FILE]

A form is named b<block>-<zp|sym>-a<accuracy level>-t<table bits>: MatMul weights in 4-bit blocks of <block>
with a zero point per block (zp) or none (sym), MatMulNBits at accuracy level 0 (fp32) or 4 (int8 activations),
embedding tables in 4-bit blocks (t4, GatherBlockQuantized) or int8 per row (t8). The default grid: the form
before (b16-zp-a4-t4), each axis changed from it alone, and the form chosen (int4.FORM, b32-sym-a0-t4) beside
the same at level 4.

Each form is made from the repository's fp32 file as the build makes it: when it misses the serving bound on the
golden inputs, the same fallback search (convert/rescue/) keeps the nodes it names in 8-bit blocks, and the file
measured is the one the build would serve. Then, beside fp32 and Transformers.js's q4 (scripts/bench/peer/.cache, when
peer_bench.py has made it):
- accuracy: min cosine to fp32 of sentence_embedding on the golden inputs (the build's judgement: budget 0.98,
  served within 0.982) and on the 40 texts of scripts/bench/peer/texts.py in batches of 8, native onnxruntime;
- warm run time: native onnxruntime (CPU), Chromium WebAssembly (one page per thread count, all sessions open,
  the forms alternating each round) and WebGPU (SwiftShader: batch 1, a few runs), median ms; batch 1 is the
  text of median length, batch 8 the first 8 texts padded to the longest.
Ratios within one run matter, not absolute times (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import ort_page  # a script's own folder is on its path

from onnxport.accuracy import budgets, compare, measure
from onnxport.convert.arithmetic import arithmetic
from onnxport.convert.rescue import fallback, node_errors
from onnxport.convert.variants import int4
from onnxport.pipelines.text import TextPipeline
from onnxport.repository import testdata
from onnxport.repository.store import Repository
from onnxport.repository.variant_table import variant

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "bench" / "peer"))
from texts import TEXTS  # noqa: E402 (scripts/bench/peer)

# The form before issue 43 first (the base of the ratios), each axis changed from it alone, then int4.FORM
# (b32-sym-a0-t4) and the same at level 4.
GRID = (
    "b16-zp-a4-t4",
    "b32-zp-a4-t4",
    "b64-zp-a4-t4",
    "b16-sym-a4-t4",
    "b16-zp-a0-t4",
    "b16-zp-a4-t8",
    "b32-sym-a0-t4",
    "b32-sym-a4-t4",
)
PEER_Q4 = "scripts/bench/peer/.cache/*/onnx/model_q4.onnx"
BATCH = 8
RUNS = {1: 8, 8: 3}  # warm runs per round at batch 1 and 8 (native and WebAssembly)
WEBGPU_RUNS = 3
RUNTIMES = ("native", "wasm", "webgpu")
INT4_SHARE = variant("int4").rescue_share  # what the build's fallback search may keep of int4's MatMuls


@dataclass
class Row:
    name: str
    file: Path
    kept: int | None = None  # nodes the fallback keeps in 8-bit blocks (None: not an int4 form)
    golden_first: float | None = None  # before the fallback
    golden: float | None = None
    texts: float | None = None
    peer: bool = False  # Transformers.js's file: unpooled output, token_type_ids input
    times: dict[str, float] = field(default_factory=dict)
    browser_cosine: dict[str, float] = field(default_factory=dict)

    @property
    def mb(self) -> float:
        return self.file.stat().st_size / 2**20


def parse_form(name: str) -> int4.Form:
    try:
        block, points, level, table = name.split("-")
        assert points in ("zp", "sym") and block[0] == "b" and level[0] == "a" and table[0] == "t"
        return int4.Form(
            block=int(block[1:]), symmetric=points == "sym", accuracy_level=int(level[1:]), table_bits=int(table[1:])
        )
    except (ValueError, AssertionError):
        raise SystemExit(f"form {name!r}: expected b<block>-<zp|sym>-a<level>-t<4|8>, as b32-sym-a4-t4") from None


def session(path: Path, threads: int = 0) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def embed(row: Row, runner: ort.InferenceSession, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """sentence_embedding, or for the peer's file its last_hidden_state mean-pooled and normalized."""
    if not row.peer:
        return runner.run(None, feeds)[0]
    out = runner.run(None, {**feeds, "token_type_ids": np.zeros_like(feeds["input_ids"])})[0]
    return pooled(out, feeds["attention_mask"])


def pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    mean = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
    return mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)


def cosine_min(reference: np.ndarray, got: np.ndarray) -> float:
    return compare.task_metric("embedding", reference, got)["cosine_min"]


class Judge:
    """The build's judgement of an int4 file on the golden inputs (variant_maker._attempt), and its fallback
    search (variant_maker._rescue) with the form's own make_int4."""

    def __init__(self, fp32: onnx.ModelProto, golden: list[dict[str, np.ndarray]], task: str, output: str):
        self.fp32, self.golden, self.task, self.output = fp32, golden, task, output
        runner = ort.InferenceSession(fp32.SerializeToString(), providers=["CPUExecutionProvider"])
        self.expected = [dict(zip([o.name for o in runner.get_outputs()], runner.run(None, g))) for g in golden]

    def attempt(self, form: int4.Form, kept: tuple[str, ...]) -> tuple[onnx.ModelProto, float, str | None]:
        model, _ = int4.make_int4(self.fp32, kept, form)
        runner = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        got = [dict(zip([o.name for o in runner.get_outputs()], runner.run(None, g))) for g in self.golden]
        vs_fp32 = measure.against(self.expected, got, self.task, self.output)
        computes = arithmetic(model)
        reason = measure.verdict(
            computes, budgets.serving_budget(computes), self.task, vs_fp32, bound=budgets.SERVING_BOUND
        )
        return model, vs_fp32["metric"]["cosine_min"], reason

    def build(self, form: int4.Form) -> tuple[onnx.ModelProto, tuple[str, ...], float, float]:
        """(the file the build would serve, the nodes kept in 8-bit blocks, golden cosine first and served)."""
        model, first, reason = self.attempt(form, ())
        if reason is None:
            return model, (), first, first
        candidates = int4.candidates(self.fp32)
        ranked = node_errors.introduced_errors(self.fp32, model, self.golden[:2], candidates)
        ranking = [node for node, _ in ranked if node in candidates]
        found = fallback.search(ranking, len(candidates), lambda kept: self._try(form, kept), INT4_SHARE)
        if found.best is None:  # the build's second search: the candidates in graph order
            in_order = [n.name for n in self.fp32.graph.node if n.name in candidates]
            found = fallback.search(in_order, len(candidates), lambda kept: self._try(form, kept), INT4_SHARE)
        if found.best is None:
            return model, (), first, first  # not served by the build: measured as made, marked by its cosine
        best, cosine = found.best
        return best, found.kept, first, cosine

    def _try(self, form: int4.Form, kept: tuple[str, ...]):
        model, cosine, reason = self.attempt(form, kept)
        return (model, cosine), reason


def make_forms(args, judge: Judge, folder: Path) -> list[Row]:
    rows = []
    for name in args.forms:
        form = parse_form(name)
        path, record = folder / f"{name}.onnx", folder / f"{name}.json"
        if path.exists() and record.exists():
            made = json.loads(record.read_text())
        else:
            began = time.perf_counter()
            model, kept, first, served = judge.build(form)
            onnx.save(model, str(path))
            made = {"kept": list(kept), "golden_first": first, "golden": served}
            record.write_text(json.dumps(made, indent=1))
            print(
                f"  {name}: made in {time.perf_counter() - began:.0f} s, {len(kept)} kept in 8-bit blocks", flush=True
            )
        rows.append(Row(name, path, kept=len(made["kept"]), golden_first=made["golden_first"], golden=made["golden"]))
    return rows


def native_times(rows: list[Row], feeds: dict[int, dict[str, np.ndarray]], threads: int, rounds: int) -> None:
    runners = [session(row.file, threads) for row in rows]
    samples: dict[tuple[str, int], list[float]] = {}
    for step in range(rounds + 1):  # the first round warms up
        for row, runner in zip(rows, runners):
            for batch, batch_feeds in feeds.items():
                times = []
                for _ in range(RUNS[batch]):
                    began = time.perf_counter()
                    embed(row, runner, batch_feeds)
                    times.append((time.perf_counter() - began) * 1000)
                samples.setdefault((row.name, batch), []).extend(times if step else [])
    for (name, batch), times in samples.items():
        next(r for r in rows if r.name == name).times[f"native {threads}t b{batch}"] = statistics.median(times)


def page_feeds(row: Row, batch_feeds: dict[str, np.ndarray]) -> dict[str, dict]:
    extra = {"token_type_ids": np.zeros_like(batch_feeds["input_ids"])} if row.peer else {}
    return ort_page.encode({**batch_feeds, **extra})


def browser_times(
    rows: list[Row],
    folder: Path,
    feeds: dict[int, dict[str, np.ndarray]],
    reference: dict,
    *,
    threads: int,
    webgpu: bool,
    rounds: int,
) -> None:
    label = "webgpu" if webgpu else f"wasm {threads}t"
    batches = {1: WEBGPU_RUNS} if webgpu else RUNS
    with ort_page.opened(folder, threads=None if webgpu else threads, webgpu=webgpu) as page:
        if not webgpu and page.evaluate("threads()") != threads:
            raise SystemExit(f"the page runs {page.evaluate('threads()')} threads, not {threads}")
        live = []
        for row in rows:
            for batch in batches:
                key = f"{row.name} b{batch}"
                page.evaluate("([key, feeds]) => setFeeds(key, feeds)", [key, page_feeds(row, feeds[batch])])
            try:
                page.evaluate("([name, file]) => openSession(name, file)", [row.name, row.file.name])
            except Exception as exc:  # a form a runtime cannot take is a finding, not the end of the table
                print(f"  {label} {row.name}: {str(exc).splitlines()[0][:200]}", flush=True)
                continue
            live.append(row)
        samples: dict[tuple[str, int], list[float]] = {}
        for step in range(1 if webgpu else rounds + 1):
            for row in live:
                for batch, runs in batches.items():
                    got = page.evaluate(
                        "([name, key, runs, out]) => timeRuns(name, key, runs, out)",
                        [row.name, f"{row.name} b{batch}", 1 if step == 0 else runs, step == 0],
                    )
                    if step == 0:  # the first run: not a warm one, but its output is checked
                        values = np.asarray(got["output"], np.float32).reshape(got["dims"])
                        if row.peer:
                            values = pooled(values, feeds[batch]["attention_mask"])
                        row.browser_cosine[f"{label} b{batch}"] = cosine_min(reference[batch], values)
                        if webgpu:
                            got = page.evaluate(
                                "([name, key, runs]) => timeRuns(name, key, runs, false)",
                                [row.name, f"{row.name} b{batch}", runs],
                            )
                    if webgpu or step:
                        samples.setdefault((row.name, batch), []).extend(got["times"])
                if webgpu:  # minutes a row: say where it is
                    print(f"  {row.name}: {statistics.median(samples[(row.name, 1)]):.0f} ms", flush=True)
        for (name, batch), times in samples.items():
            next(r for r in rows if r.name == name).times[f"{label} b{batch}"] = statistics.median(times)


def table(rows: list[Row], columns: list[str]) -> str:
    bound = budgets.serving_budget("int8").cosine_min
    head = ["form", "MB", "8-bit kept", "golden cos (first)", f"served (>= {bound})", "texts min cos", *columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base = rows[0].times
    for row in rows:
        golden = "" if row.golden is None else f"{row.golden:.5f} ({row.golden_first:.5f})"
        served = "" if row.golden is None else ("yes" if row.golden >= bound else "no")
        cells = [
            row.name,
            f"{row.mb:.1f}",
            "" if row.kept is None else str(row.kept),
            golden,
            served,
            f"{row.texts:.5f}",
        ]
        for column in columns:
            ms = row.times.get(column)
            cells.append(
                "failed" if ms is None else f"{ms:.1f} ({ms / base[column]:.2f}x)" if column in base else f"{ms:.1f}"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path, default=ROOT / "models" / ".repository")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--forms", nargs="+", default=list(GRID), help="the first is the base of the ratios")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--runtimes",
        nargs="+",
        choices=RUNTIMES,
        default=list(RUNTIMES),
        help="webgpu takes minutes a form on SwiftShader",
    )
    parser.add_argument(
        "--extra",
        nargs="+",
        default=[],
        metavar="NAME=FILE",
        help="other files of the model to measure beside the forms (sentence_embedding out)",
    )
    parser.add_argument("--folder", type=Path, help="where the files go; forms already there are reused")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    repo = Repository(args.repository)
    entry = repo.read_manifest()["models"][args.model]
    fp32_path = repo.path_of(entry["variants"]["fp32"]["file"])
    golden = [inputs for inputs, _ in testdata.read_golden(repo.root, entry)]
    spec = entry["pipeline"]["text"]
    texts = TextPipeline(spec, repo.path_of(entry["assets"][spec["tokenizer"]]["file"]))
    text_batches = [texts.encode(TEXTS[i : i + BATCH]) for i in range(0, len(TEXTS), BATCH)]
    # Batch 1: the text of median length, as a page embeds one sentence (a 128-token input hides the cost a
    # run pays whatever its length); batch 8: the first 8 texts.
    lengths = [len(texts.encode([t])["input_ids"][0]) for t in TEXTS]
    feeds = {1: texts.encode([TEXTS[int(np.argsort(lengths)[len(lengths) // 2])]]), 8: text_batches[0]}

    folder = ort_page.folder("onnxport-int4-forms-")
    made_in = args.folder or folder
    made_in.mkdir(parents=True, exist_ok=True)
    print(f"forms of {args.model} int4 from {fp32_path.name}, in {made_in}", flush=True)
    judge = Judge(onnx.load(str(fp32_path)), golden, entry["task"], entry["metric_output"])
    rows = [Row("fp32", fp32_path), *make_forms(args, judge, made_in)]
    rows += [Row(name, Path(file)) for name, file in (extra.split("=", 1) for extra in args.extra)]
    peer = sorted(ROOT.glob(PEER_Q4))
    if peer:
        rows.append(Row("transformers.js q4", peer[-1], peer=True))
    for row in rows:  # the page serves them under names a URL takes as they are
        served = folder / (re.sub(r"[^A-Za-z0-9-]+", "-", row.name) + ".onnx")
        if served != row.file:
            served.symlink_to(row.file.resolve())
        row.file = served

    reference_runner = session(rows[0].file)
    reference_texts = np.concatenate([embed(rows[0], reference_runner, b) for b in text_batches])
    reference = {batch: embed(rows[0], reference_runner, f) for batch, f in feeds.items()}
    for row in rows:
        runner = session(row.file)
        row.texts = cosine_min(reference_texts, np.concatenate([embed(row, runner, b) for b in text_batches]))
    rows = [rows[1], *rows[2:], rows[0]]  # the old form first: the base of the ratios

    columns = []
    for threads in args.threads if "native" in args.runtimes else ():
        print(f"native onnxruntime, {threads} threads", flush=True)
        native_times(rows, feeds, threads, args.rounds)
        columns += [f"native {threads}t b1", f"native {threads}t b8"]
    for threads in args.threads if "wasm" in args.runtimes else ():
        print(f"Chromium WebAssembly, {threads} threads", flush=True)
        browser_times(rows, folder, feeds, reference, threads=threads, webgpu=False, rounds=args.rounds)
        columns += [f"wasm {threads}t b1", f"wasm {threads}t b8"]
    if "webgpu" in args.runtimes:
        print("Chromium WebGPU (SwiftShader)", flush=True)
        browser_times(rows, folder, feeds, reference, threads=1, webgpu=True, rounds=1)
        columns.append("webgpu b1")

    print(f"\nwarm run ms, median (x {rows[0].name}); cosines to fp32 (native onnxruntime)\n")
    print(table(rows, columns))
    print("\nmin cosine to fp32 (native) of each browser's first run:")
    for row in rows:
        print(f"  {row.name}: " + ", ".join(f"{k} {v:.5f}" for k, v in row.browser_cosine.items()))
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        **{k: v for k, v in vars(row).items() if k != "file"},
                        "mb": row.mb,
                        "file": str(row.file.resolve()),
                    }
                    for row in rows
                ],
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
