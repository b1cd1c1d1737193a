"""First runs: is the Cast's cost paid once per WebAssembly instance, per session, or per run? (docs/cast.md)

    .venv/bin/python scripts/cast/first_run.py [--out /tmp/onnxport-cast] [--js-flags '--no-wasm-lazy-compilation']

Each sequence runs in a fresh Chromium (so a fresh onnxruntime-web WebAssembly instance, 1 thread, in a
Worker): for each model in turn, a new session (no profiling) and 4 runs, the wall time of each
(performance.now() around session.run()). Writes <out>/first_run[-<flags>].json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import variants

import browser

SEQUENCES = {
    "cast_then_cast": ["cast_input_i64_f32_128", "cast_input_i64_f32_128", "cast_input_i64_bool_128",
                       "cast_input_i32_f32_128", "cast_middle_i64_f32_128"],
    "others_then_cast": ["identity_input_i64_128", "add_input_i64_128", "cast_middle_i64_f32_128",
                         "cast_input_i64_f32_128"],
    "no_cast": ["identity_input_i64_128", "add_input_i64_128"],
    "minilm_alone": ["minilm"],
    "cast_then_minilm": ["cast_input_i64_f32_128", "minilm"],
    "iris_alone": ["iris"],
    "cast_then_iris": ["cast_input_i64_f32_128", "iris"],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/onnxport-cast")
    parser.add_argument("--js-flags", default="", help="passed to Chromium as --js-flags=...")
    parser.add_argument("--browser", default="/usr/bin/chromium")
    parser.add_argument("--sequences", default=",".join(SEQUENCES))
    parser.add_argument("--repeat", type=int, default=1, help="each sequence this many times, each in a fresh Chromium")
    args = parser.parse_args()
    out = Path(args.out)
    built = variants.build(out, "all")
    server, base = browser.serve(out, built)
    extra = [f"--js-flags={args.js_flags}"] if args.js_flags else []
    from playwright.sync_api import sync_playwright

    result = {"js_flags": args.js_flags, "sequences": {}}
    try:
        with sync_playwright() as pw:
            for seq in [s for s in args.sequences.split(",") for _ in range(args.repeat)]:
                rows = []
                with browser.page_in(pw, args.browser, base, extra) as (call, info):
                    result.setdefault("init", info)
                    for name in SEQUENCES[seq]:
                        sid = call("create", {"url": f"{base}m/{name}.onnx",
                                              "feeds": browser.feeds_json(built[name]["feeds"])})
                        ms = call("time", {"sessionIds": [sid], "warmup": 0, "runs": 4})[str(sid)]
                        call("release", {"session": sid})
                        rows.append({"model": name, "runs_ms": [round(x, 3) for x in ms]})
                        print(f"{seq:18} {name:28} " + " ".join(f"{x:9.3f}" for x in ms), flush=True)
                result["sequences"].setdefault(seq, []).append(rows)
    finally:
        server.shutdown()
    print("median first run (ms), per sequence and position:")
    for seq, repeats in result["sequences"].items():
        for i, row in enumerate(repeats[0]):
            firsts = [r[i]["runs_ms"][0] for r in repeats]
            print(f"  {seq:18} {row['model']:28} {statistics.median(firsts):9.3f}  (n={len(firsts)}: {firsts})")
    tag = "-" + args.js_flags.strip("-").replace(" ", "_").replace("=", "_") if args.js_flags else ""
    (out / f"first_run{tag}.json").write_text(json.dumps(result, indent=1))
    print("wrote", out / f"first_run{tag}.json")


if __name__ == "__main__":
    main()
