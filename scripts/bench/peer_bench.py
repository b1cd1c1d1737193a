"""onnxport beside Transformers.js: all-MiniLM-L6-v2 feature extraction (mean pooling, L2 norm) in one page of this
machine's Chromium, on WebAssembly, as users meet them (issue 43) or on the same thread count (issue 35).

    .venv/bin/python scripts/bench/peer_bench.py [--mode users|pinned] [--rounds 5] [--threads N] [--repository DIR]
                                           [--json FILE]

--mode users (the default): each library's defaults (no options on either side: Transformers.js's wasm dtype and
onnxruntime-web's thread count; onnxport's load(), its plan's variant and thread choice), then each pair of dtypes
with the peer on --threads (default min(4, cores)) and onnxport's load() of that variant choosing its own threads.
--mode pinned: each pair on --threads on both sides (default onnxruntime-web's, min(4, ceil(cores / 2))).
Either way the threads each side ran on are reported per round.

What it does (docs/notes/peer-bench.md has the why and a run's figures):
1. installs Transformers.js 4.3.2 from npm into scripts/bench/peer/node_modules when missing (`npm ci --prefix
   scripts/bench/peer`; never part of make check or make test), with onnxruntime-web overridden to onnxport's 1.30.0;
2. makes the model folder Transformers.js reads (config, tokenizer, onnx/model.onnx unpooled fp32, q8, q4) from
   the demo's pip package the way Transformers.js's conversion does (scripts/bench/peer/model_folder.py; cached);
3. builds minilm with onnxport into a temporary repository (or takes --repository) and serves it;
4. serves the page and the peer's files from a small cross-origin isolated server of its own; onnxport's server
   lets that origin in (--cors-origins);
5. cold starts (a new browser context each, from nothing to the first embedding) and warm rounds (batch 1 and 8),
   the sides alternating, then every side's embeddings of 40 texts against the server's fp32;
6. prints the table (ratios onnxport/peer: below 1 is onnxport faster) and writes --json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PEER = HERE / "peer"
sys.path.insert(0, str(PEER))

import browser_run  # noqa: E402 (scripts/bench/peer is on the path from here)
import model_folder  # noqa: E402
import npm_install  # noqa: E402
import report  # noqa: E402
from reference import server_embeddings  # noqa: E402
from static_server import StaticServer  # noqa: E402
from texts import TEXTS  # noqa: E402

CACHE = PEER / ".cache"  # the model folder, built once per source weights and recipe (git-ignored)
RUNS = {1: 8, 8: 3}  # warm calls per round and side at each batch size
WARMUP = 2
SETTLE_ROUNDS = 3  # unmeasured warm rounds first: Chromium's background recompile of hot WebAssembly (browser_run)
ACCURACY_BATCH = 8


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    from playwright.sync_api import sync_playwright

    from onnxport.harness.process import ServerNotReady, free_port, server_environment, start_server

    cores = os.cpu_count() or 1
    # onnxruntime-web's own default, which Transformers.js keeps: min(4, ceil(cores / 2)); onnxport's first load
    # starts on the page's min(4, cores) (one thread where the browser overstates its cores), then its trial decides.
    default_threads = min(4, math.ceil(cores / 2))
    threads = args.threads or (default_threads if args.mode == "pinned" else min(4, cores))
    if threads > 4:
        raise SystemExit("peer_bench: --threads at most 4 (onnxport's WebAssembly ceiling, web/lib/choice/probe.js)")
    whose = "both sides" if args.mode == "pinned" else "the peer's pairs (onnxport: its own choice)"
    print(
        f"mode {args.mode}; threads: {threads} on {whose} ({'--threads' if args.threads else 'the default'}; "
        f"defaults on this {cores}-core machine: Transformers.js {default_threads} (onnxruntime-web's min(4, "
        f"ceil(cores/2))), onnxport {min(4, cores)} on a first load, then what its trial finds)",
        flush=True,
    )

    npm_install.ensure(PEER)
    print("model folder: building or reusing", CACHE, flush=True)
    folder, built = model_folder.cached(CACHE)
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="peer-bench-")))
        repository = args.repository or _build_repository(work / "repository")
        static = StaticServer(
            {
                "/peer/transformers/": PEER / "node_modules/@huggingface/transformers/dist",
                "/peer/ort/": PEER / "node_modules/onnxruntime-web/dist",
                f"/peer/models/{folder.name.rsplit('-', 1)[0]}/": folder,
                "/peer/": PEER / "web",
            },
            free_port(),
        )
        stack.callback(static.close)
        port = free_port()
        try:
            server = start_server(
                ["serve", "--repository", str(repository), "--port", str(port), "--cors-origins", static.base_url],
                port=port,
                log_path=work / "serve.log",
                env=server_environment(inherit_onnxport=False),
                timeout=120,
            )
        except ServerNotReady as exc:
            raise SystemExit(f"peer_bench: onnxport serve did not start: {exc}") from None
        stack.callback(server.stop)

        manifest = json.loads((repository / "manifest.json").read_text())
        variants = manifest["models"]["minilm"]["variants"]
        served = [name for name, v in variants.items() if v.get("status") == "ok"]  # as the library's served()
        rows = report.pairs(served, mode=args.mode, threads=threads)
        sides = report.sides(rows)
        sizes = {f"onnxport/{n}": variants[n]["bytes"] for n in served}
        sizes.update({f"peer/{d}": f["bytes"] for d, f in built["files"].items()})
        print(
            f"onnxport's served minilm variants: {', '.join(served)}; pairs: "
            + "; ".join(f"{o.name if o else '(none)'} vs {p.name}" for _, o, p in rows),
            flush=True,
        )

        reference = server_embeddings(server.base_url, TEXTS, batch=ACCURACY_BATCH)
        results = browser_run.Results()
        url = f"{static.base_url}/peer/index.html?server={server.base_url}/"
        load_before = os.getloadavg()[0]  # the minute before includes our own build, if one ran
        with sync_playwright() as playwright:
            pinned = args.mode == "pinned"
            cores_override = threads if pinned and threads > 1 and threads != min(4, cores) else None
            bench = browser_run.BenchPage(playwright, url, cores=cores_override)
            try:
                also = " (+ onnxport's load())" if pinned else ""
                print(f"cold starts: {args.rounds} rounds x {len(sides)} sides{also}", flush=True)
                browser_run.cold_starts(
                    bench, sides, rounds=args.rounds, text=TEXTS[0], results=results, load_too=pinned
                )
                print(
                    f"warm: {SETTLE_ROUNDS} unmeasured then {args.rounds} rounds of {RUNS[1]} batch-1 and "
                    f"{RUNS[8]} batch-8 calls per side, the same texts for every side",
                    flush=True,
                )
                for group in report.pages(rows):  # one page per peer thread setting
                    browser_run.warm_rounds(
                        bench,
                        group,
                        rounds=args.rounds,
                        texts=TEXTS,
                        runs=RUNS,
                        warmup=WARMUP,
                        settle_rounds=SETTLE_ROUNDS,
                        accuracy_batch=ACCURACY_BATCH,
                        results=results,
                    )
                chromium_version = bench.browser.version
            finally:
                bench.close()

    table = report.table_rows(rows, results, reference=reference, sizes=sizes)
    document = _document(args, threads, default_threads, built, results, table, chromium_version, served)
    # Another program's work slows whichever side runs beside it: the rounds alternate, and the load says how idle.
    document["load_average_1min"] = {"before": load_before, "after": os.getloadavg()[0]}
    print()
    print(report.printed(table, _header(document)))
    if args.json:
        args.json.write_text(json.dumps(document, indent=1) + "\n")
        print(f"\nwritten: {args.json}")
    return 0


def _arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mode",
        choices=("users", "pinned"),
        default="users",
        help="users: each library's defaults, then each pair with onnxport's own thread choice; "
        "pinned: each pair on --threads on both sides (default users)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="A/B rounds, cold and warm (default 5)")
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="WebAssembly threads: both sides when pinned (default onnxruntime-web's default here), "
        "the peer's pairs in users mode (default min(4, cores)); printed",
    )
    parser.add_argument("--repository", type=Path, help="an onnxport repository with minilm (default: build one)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.threads < 0:
        parser.error("--rounds must be at least 1 and --threads positive")
    if args.repository and not (args.repository / "manifest.json").exists():
        parser.error(f"--repository {args.repository}: no manifest.json there")
    return args


def _build_repository(into: Path) -> Path:
    print(f"onnxport build minilm into {into} (a few minutes)", flush=True)
    command = [
        sys.executable,
        "-m",
        "onnxport",
        "build",
        "minilm",
        "--repository",
        str(into),
        "--recipes",
        str(ROOT / "models"),
        "--quiet",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        output = (done.stderr or done.stdout)[-800:]
        raise SystemExit(f"peer_bench: onnxport build failed ({done.returncode}): {output}")
    return into


def _document(args, threads, default_threads, built, results, table, chromium_version, served) -> dict:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True
    ).stdout.strip()
    infos = results.infos
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit + ("+changes" if dirty else ""),
        "machine": {"cpu": _cpu(), "cores": os.cpu_count(), "platform": platform.platform()},
        "chromium": chromium_version,
        "page": results.page,
        "mode": args.mode,
        "threads": threads,
        "default_threads_peer": default_threads,
        "rounds": args.rounds,
        "runs_per_round": RUNS,
        "warmup": WARMUP,
        "settle_rounds": SETTLE_ROUNDS,
        "texts": len(TEXTS),
        "accuracy_batch": ACCURACY_BATCH,
        "onnxruntime_web": {name: info.get("version") for name, info in infos.items()},
        "peer_wasm": next((i.get("wasm") for n, i in infos.items() if n.startswith("peer/")), None),
        "peer_model_folder": built,
        "onnxport_served": served,
        "reference": "onnxport serve, minilm fp32 (native onnxruntime), V2 raw text, batches of 8",
        "rows": table,
        "raw": {
            "cold": results.cold,
            "cold_load": {k: [{**c, "embedding": None} for c in v] for k, v in results.cold_load.items()},
            "warm": results.warm,
            "infos": infos,
        },
    }


def _header(document: dict) -> list[str]:
    versions = sorted({f"{n.split('/')[0]} {v}" for n, v in document["onnxruntime_web"].items()})
    return [
        f"onnxport vs Transformers.js 4.3.2: all-MiniLM-L6-v2, Chromium {document['chromium']}, WebAssembly, "
        f"{_threads_words(document)}, {document['rounds']} rounds; {document['date']}, commit "
        f"{document['commit']}, {document['machine']['cpu']} ({document['machine']['cores']} cores)",
        f"onnxruntime-web: {', '.join(versions)}; peer wasm: {Path(document['peer_wasm'] or '-').name}; "
        f"onnxslim: {'yes' if document['peer_model_folder']['onnxslim'] else 'no (not installed)'}; load average "
        f"(1 min) {document['load_average_1min']['before']:.2f} before, {document['load_average_1min']['after']:.2f} "
        f"after on {document['machine']['cores']} cores",
        "ms are medians (best: the fastest call); (x) = onnxport / peer, below 1 is onnxport faster; cold = new "
        "context to first embedding (download included), both on the threads above; cold load() = onnxport's "
        "load() as a page calls it (its own thread choice, first-use verification); min cos over 40 texts vs the "
        "server's fp32",
        "",
    ]


def _threads_words(document: dict) -> str:
    if document["mode"] == "pinned":
        return f"{document['threads']} thread(s) each"
    return (
        f"each library's defaults, then the peer on {document['threads']} thread(s) beside onnxport's own thread choice"
    )


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
