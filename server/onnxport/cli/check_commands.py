"""`onnxport check` and `onnxport bench`: the served variants run in browsers, and every path measured."""

from __future__ import annotations

import json
import sys

from onnxport.cli.option_checks import chromium_given, known_models, writable_output
from onnxport.convert.intake.request import readable
from onnxport.errors import UsageError
from onnxport.harness.interrupts import sigterm_interrupts


def check(args) -> int:
    from onnxport.extras import require

    if [r for r in args.runtimes.split(",") if r and r != "server"]:  # `server` alone drives no browser
        require("playwright", "check")  # before a server starts
    from onnxport.check import check_report
    from onnxport.check.check_run import FAILING, run_check
    from onnxport.check.row_stream import RowStream
    from onnxport.harness import browser_engines

    wanted = browser_engines.requested(args.browsers)  # the command line's mistakes first, then this machine's
    chromium_given(args.browser)
    writable_output("--json", args.json)
    writable_output("--html", args.html)
    if args.tolerances is not None:
        readable("--tolerances", args.tolerances, "file")
    if args.url is None:  # the check's own server serves this repository: its names, before the server starts
        from onnxport.repository.store import Repository

        known_models(Repository(args.repository).read_manifest(), args.models, args.repository, decoders=True)
    with sigterm_interrupts():
        report = run_check(
            repository=args.repository,
            url=args.url,
            models=args.models,
            runtimes=[r for r in args.runtimes.split(",") if r],
            browsers=wanted,
            browser=args.browser,
            webgpu_rows=args.webgpu_rows,
            full_webgpu=args.full_webgpu,
            find_divergence=args.locate,
            tolerances_file=args.tolerances,
            timeout_s=args.timeout,
            row_timeout_s=args.row_timeout,
            stream=RowStream(),
        )
    # Written first: the rows of a long check must outlive any trouble printing them.
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    html_path = args.html or (args.json.with_suffix(".html") if args.json else None)
    if html_path:
        html_path.write_text(check_report.to_html(report))
    print(check_report.text_table(report))
    if report["incomplete"]:
        written = f"; its {len(report['results'])} finished rows are in {args.json}" if args.json else ""
        print(f"onnxport: check incomplete: {report['incomplete']}{written}", file=sys.stderr)
        return 3
    return 1 if any(r["status"] in FAILING for r in report["results"]) else 0


def bench(args) -> int:
    if args.generation is not None:  # a decoder folder's generation speed: no repository, server or browser
        from onnxport.cli.decoder_commands import bench_generation

        return bench_generation(args)
    from onnxport.extras import require
    from onnxport.harness import browser_engines

    wanted = browser_engines.requested(args.browsers) if args.runtimes else None
    if args.runtimes:  # browser runtimes to measure: the command line's mistakes first, then this machine's
        if wanted is None or {"chromium", "firefox"} & set(wanted):
            require("playwright", "bench")  # the extra to install, before a server starts
        chromium_given(args.browser)
    writable_output("--json", args.json)
    from onnxport.repository.store import Repository

    known_models(Repository(args.repository).read_manifest(), args.models, args.repository)
    replicas = None
    if args.engine == "ray":
        replicas = [int(n) for n in args.replicas.split(",") if n.strip().isdigit() and int(n) >= 1]
        if not replicas or len(replicas) != len(args.replicas.split(",")):
            raise UsageError(f"--replicas {args.replicas!r}: expected replica counts of at least 1, e.g. 1,2")
    browsers = None
    if args.runtimes:  # an engine that is not installed fails before a server starts
        browsers = browser_engines.available(wanted)
    from onnxport.bench import bench_report
    from onnxport.bench.bench_run import run_bench, save_latest

    with sigterm_interrupts():  # the server and browsers it started are stopped, as by Ctrl-C
        report = run_bench(
            args.repository,
            args.models,
            [r for r in args.runtimes.split(",") if r],
            30 if args.runs is None else args.runs,
            args.browser,
            say=lambda line: print(f"... {line}", file=sys.stderr, flush=True),
            ray_replicas=replicas,
            browsers=browsers,
        )
    # Saved first: minutes of measurement must outlive any trouble printing them.
    latest = save_latest(args.repository, report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(bench_report.text(report))
    print(f"\nwrote {latest}" + (f" and {args.json}" if args.json else ""))
    return 0
