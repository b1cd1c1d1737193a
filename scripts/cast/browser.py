"""The Cast probe in Chromium: onnxruntime-web 1.30.0 WebAssembly, 1 thread, in a Worker (docs/cast.md).

    .venv/bin/python scripts/cast/browser.py [--out /tmp/onnxport-cast] [--runs 30] [--profile-runs 10]
                                             [--groups tiny,minilm] [--browser /usr/bin/chromium]

Builds the variants (scripts/cast/variants.py) into --out, serves a temporary folder (the page in
scripts/cast/page/, node_modules/onnxruntime-web/dist, the models) with Python's http.server, and in one
page: (1) profiles every model (enableProfiling; a first run, then --profile-runs runs; the trace is read
from the console as web/app/bench.js does) and (2) times warm runs of each group, interleaved
(A B C A B C ...), in sessions without profiling. Writes <out>/browser.json and prints a summary.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import variants

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "node_modules" / "onnxruntime-web" / "dist"
PAGE = Path(__file__).resolve().parent / "page"
FLAGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync"]

GROUPS = {
    "tiny": ["cast_input_i64_f32_128", "identity_input_i64_128", "cast_internal_i64_f32_128", "cast_middle_i64_f32_128",
             "add_input_i64_128", "cast_input_i64_bool_128", "cast_input_i32_f32_128",
             "cast_input_i64_f32_16384", "identity_input_i64_16384", "cast_internal_i64_f32_16384",
             "cast_input_i64_f32_1048576", "identity_input_i64_1048576", "cast_internal_i64_f32_1048576", "iris"],
    "minilm": ["minilm", "minilm_mask_bool", "minilm_mask_float"],
}


class Handler(SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, fmt, *args):
        if len(args) > 1 and str(args[1]).startswith(("4", "5")):
            print("http:", fmt % args, file=sys.stderr)


def serve(out: Path, built: dict) -> tuple[ThreadingHTTPServer, str]:
    www = out / "www"
    (www / "m").mkdir(parents=True, exist_ok=True)
    for link, target in [(www / "index.html", PAGE / "index.html"), (www / "worker.js", PAGE / "worker.js"),
                         (www / "ort", DIST)] + [(www / "m" / f"{name}.onnx", e["path"]) for name, e in built.items()]:
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(Path(target).resolve())
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(www)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def feeds_json(feeds) -> dict:
    kinds = {"int64": "int64", "int32": "int32", "float32": "float32", "bool": "bool"}
    return {name: {"type": kinds[str(a.dtype)], "dims": list(a.shape), "data": a.ravel().tolist()}
            for name, a in feeds.items()}


@contextlib.contextmanager
def page_in(pw, executable: str, base: str, extra_flags=()):
    """A fresh Chromium with the probe page loaded and onnxruntime-web started (1 thread): (call, init info)."""
    browser = pw.chromium.launch(executable_path=executable, args=[*FLAGS, *extra_flags])
    try:
        page = browser.new_page()
        page.on("console", lambda m: m.type == "error" and print("console:", m.text, file=sys.stderr))
        page.goto(base + "index.html")
        page.wait_for_function("window.ready === true")

        def call(op, a):
            return page.evaluate("([op, a]) => probe(op, a)", [op, a])

        info = {**call("init", {"ortBase": base + "ort/", "threads": 1}), "chromium": browser.version}
        yield call, info
    finally:
        browser.close()


def profile_entry(prof: dict, profile_runs: int) -> dict:
    events = common.parse_events(prof["lines"])
    runs = common.per_run(events)
    warm = runs[1:]
    casts = sorted({n for r in runs for n, k in r["kernels"].items() if k["op"] == "Cast"})
    return {
        "wall_ms": [round(x, 4) for x in prof["wall"]], "lines_during_runs": prof["duringRuns"], "events": len(events),
        "runs_in_trace": len(runs),
        # web/app/bench.js kernelTimes(): every event in the trace (the first run's too) / the number of later runs
        "bench_js_op_ms": {k: round(v, 4) for k, v in sorted(
            common.bench_js_op_times(events, profile_runs).items(), key=lambda kv: -kv[1])[:6]},
        "warm_op_ms": common.warm_op_times(warm),
        "first_run": common.summarize_profile(runs[:1])["runs"][0] if runs else None,
        "warm_median": {
            "wall_ms": common.median(prof["wall"][1:]),
            "model_run_ms": common.median([r["model_run_ms"] for r in warm]),
            "kernels_ms": common.median([sum(k["ms"] for k in r["kernels"].values()) for r in warm]),
            **{c: {"ms": common.median([r["kernels"][c]["ms"] for r in warm if c in r["kernels"]]),
                   "start_ms": common.median([r["kernels"][c]["start_ms"] for r in warm if c in r["kernels"]])}
               for c in casts},
        },
        "first_run_slowest_nodes": ({n: {"op": k["op"], "ms": round(k["ms"], 4), "start_ms": round(k["start_ms"], 4)}
                                     for n, k in sorted(runs[0]["kernels"].items(), key=lambda kv: -kv[1]["ms"])[:8]}
                                    if runs else None),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    common.timing_arguments(parser)
    parser.add_argument("--browser", default="/usr/bin/chromium")
    args = parser.parse_args()
    out = Path(args.out)
    groups = [g for g in args.groups.split(",") if g]
    built = variants.build(out, "all" if "minilm" in groups else "tiny")
    server, base = serve(out, built)
    from playwright.sync_api import sync_playwright

    result = {"profiles": {}, "times": {}}
    try:
        with sync_playwright() as pw:
            for group in groups:
                names = [n for n in GROUPS[group] if not args.only or n in args.only.split(",")]
                if not names:
                    continue
                # (1) profiles: each model in a fresh browser, so its first run is a first run of the
                # WebAssembly module too (as in `onnxport bench`, which profiles in a fresh worker)
                for name in names:
                    with page_in(pw, args.browser, base) as (call, info):
                        result.setdefault("init", info)
                        spec = {"url": f"{base}m/{name}.onnx", "feeds": feeds_json(built[name]["feeds"])}
                        sid = call("create", {**spec, "profile": True})
                        prof = call("profile", {"session": sid, "runs": 1 + args.profile_runs})
                    result["profiles"][name] = entry = profile_entry(prof, args.profile_runs)
                    shown = ("runs_in_trace", "lines_during_runs", "bench_js_op_ms", "warm_op_ms", "first_run",
                             "warm_median")
                    print("profile", name, json.dumps({k: entry[k] for k in shown}), flush=True)
                # (2) warm wall times, no profiling, interleaved, in one page
                with page_in(pw, args.browser, base) as (call, info):
                    ids = {name: call("create", {"url": f"{base}m/{name}.onnx",
                                                 "feeds": feeds_json(built[name]["feeds"])})
                           for name in names}
                    times = call("time", {"sessionIds": list(ids.values()), "warmup": args.warmup, "runs": args.runs})
                for name, sid in ids.items():
                    ms = times[str(sid)]
                    timing = {"median_ms": common.median(ms), "p10_p90_ms": common.p10_p90(ms), "n": len(ms), "ms": ms}
                    result["times"][name] = timing
                    print("time", name, timing["median_ms"], timing["p10_p90_ms"], flush=True)
    finally:
        server.shutdown()
    (out / "browser.json").write_text(json.dumps(result, indent=1))
    print("wrote", out / "browser.json")


if __name__ == "__main__":
    main()
