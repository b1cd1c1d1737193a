"""`onnxport`: thin command line over build, import and the repository."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from pathlib import Path

from onnxport.accuracy.browser_runtimes import CHECKED
from onnxport.errors import OnnxportError, UsageError

DEFAULT_REPOSITORY_ENV = "ONNXPORT_REPOSITORY"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command != "serve" and args.repository is None:
            from onnxport.serving import config

            args.repository = config.load()["repository"]
        return args.handler(args)
    except UsageError as exc:
        # What the user gave does not fit (argparse's own usage errors exit 2 too).
        print(f"onnxport: error: {exc}", file=sys.stderr)
        return 2
    except (OnnxportError, ModuleNotFoundError) as exc:
        # A module of an extra that is not installed (PyTorch for a PyTorch recipe, Playwright for check...): the
        # one line says which extra to install.
        from onnxport.extras import missing_extra

        hint = missing_extra(exc, args.command)
        if hint is None and not isinstance(exc, OnnxportError):
            raise
        print(f"onnxport: error: {hint or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("onnxport: interrupted; the repository is unchanged", file=sys.stderr)
        return 130


FORMS_HELP = ("optimized forms of each served variant, for browsers to start sooner (each costs about the "
              "variant's size on disk): auto (default: each form kept only if onnxruntime starts it at least 10%% "
              "and 5 ms sooner than the variant as built; gemm, tree ensembles as tensor operators, kept as the "
              "form WebGPU runs), all, none, or a comma-separated list of ort, basic, fused, gemm (kept whatever "
              "they gain)")
VARIANTS_HELP = ("the variants to make: all (default), or a comma-separated list of fp32, fp16, int8-dynamic, "
                 "int8-static; fp32 is always made, the others are listed as skipped (a large model's int8 search "
                 "can take minutes)")
QUIET_HELP = "print nothing but errors: no progress bars, no tables, no warnings (`onnxport info NAME` has it all)"
# An imported model's one line for people (the manifest's `description`, shown by info and the pages).
DESCRIPTION_MAX = 200


def _forms(text: str) -> tuple[str, ...]:
    from onnxport.repository.variant_table import parse_forms

    try:
        return parse_forms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _variants(text: str) -> tuple[str, ...]:
    from onnxport.repository.variant_table import parse_variants

    try:
        return parse_variants(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _parser() -> argparse.ArgumentParser:
    from onnxport.convert.intake.export import DEFAULT_OPSET
    from onnxport.recipe import TASKS, default_recipes_dir
    from onnxport.repository.variant_table import AUTO, NAMES

    parser = argparse.ArgumentParser(prog="onnxport",
                                     description="Export once, run anywhere: build, serve and check ONNX models.")
    parser.add_argument("--repository", type=Path, default=None,
                        help=f"model repository folder (default: models/.repository in onnxport's checkout, "
                             f"./onnxport-repository elsewhere; ${DEFAULT_REPOSITORY_ENV}, or the config file's "
                             "`repository`)")
    sub = parser.add_subparsers(dest="command", required=True)
    # --repository is accepted after the command too (`onnxport serve --repository DIR`).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--repository", type=Path, default=argparse.SUPPRESS, help="model repository folder")

    build = sub.add_parser("build", parents=[common], help="build demo and recipe models into the repository")
    build.add_argument("models", nargs="*", help="recipe names (default: all)")
    build.add_argument("--recipes", type=Path, default=default_recipes_dir(), help="folder of recipe modules")
    build.add_argument("--opset", type=int, default=DEFAULT_OPSET,
                       help=f"ONNX opset to export to (default {DEFAULT_OPSET})")
    build.add_argument("--force", action="store_true", help="rebuild even when the recipe is unchanged")
    build.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    build.add_argument("--forms", type=_forms, default=AUTO, metavar="LIST", help=FORMS_HELP)
    build.add_argument("--variants", type=_variants, default=NAMES, metavar="LIST", help=VARIANTS_HELP)
    build.add_argument("--replace", action="store_true", help="replace imported models that have a recipe's name")
    build.set_defaults(handler=_build)

    imp = sub.add_parser("import", parents=[common],
                         help="import an .onnx file, an ONNX test directory, or a LightGBM or XGBoost model file")
    imp.add_argument("path", type=Path)
    imp.add_argument("--name", required=True,
                     help="model name in the repository: 1 to 64 of a-z 0-9 . _ -, starting with a letter or digit")
    imp.add_argument("--replace", action="store_true",
                     help="replace a model of the same name already in the repository")
    imp.add_argument("--task", default="generic", choices=TASKS)
    imp.add_argument("--metric-output", default=None,
                     help="output that carries the task metric, one of the model's outputs "
                          "(default: the first float one)")
    imp.add_argument("--inputs", type=Path, default=None, metavar="FILE.npz|FILE.npy|DIR",
                     help="evaluation (golden) inputs: a .npz with one array per input name (or '<set>/<input>' "
                          "keys), a .npy (one-input models), or a folder of .npz files or test_data_set_* folders; "
                          "checked against the model's inputs (default: a test directory's sets, else seeded "
                          "random inputs, reported as synthetic)")
    imp.add_argument("--calibration", type=Path, default=None, metavar="FILE.npz|FILE.npy|DIR",
                     help="static int8 calibration inputs, in the same forms as --inputs (default: the golden inputs)")
    imp.add_argument("--pipeline", type=Path, default=None, metavar="SPEC.json",
                     help="how raw text or an image becomes the model's inputs and its output an answer (the "
                          "manifest's `pipeline`, docs/manifest.md); checked against the model and --asset files")
    imp.add_argument("--asset", type=Path, action="append", default=[], metavar="FILE", dest="assets",
                     help="a file published beside the model under its file name, e.g. tokenizer.json (repeatable)")
    imp.add_argument("--description", default=None, metavar="TEXT",
                     help=f"one line for people, shown by `onnxport info` and the web app (at most {DESCRIPTION_MAX} "
                          "characters; default: 'Imported from FILE')")
    imp.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    imp.add_argument("--forms", type=_forms, default=AUTO, metavar="LIST", help=FORMS_HELP)
    imp.add_argument("--variants", type=_variants, default=NAMES, metavar="LIST", help=VARIANTS_HELP)
    imp.add_argument("--max-nodes", default=None, metavar="N",
                     help="most nodes (subgraphs included) the model may have; a bigger one is refused before any "
                          "work (default 50000, or the import_max_nodes setting)")
    imp.add_argument("--time-limit", default=None, metavar="SECONDS",
                     help="stop the import after this many seconds, writing nothing; 0: no limit (default 1800, "
                          "or the import_time_limit setting)")
    imp.set_defaults(handler=_import)

    rm = sub.add_parser("remove", parents=[common], help="remove models from the repository (all or none)")
    rm.add_argument("models", nargs="+", metavar="NAME", help="model names (`onnxport list` lists them)")
    rm.set_defaults(handler=_remove)

    lst = sub.add_parser("list", parents=[common], help="list models in the repository")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=_list)

    info = sub.add_parser("info", parents=[common], help="a model's metadata and variant table")
    info.add_argument("model")
    info.add_argument("--json", action="store_true")
    info.set_defaults(handler=_info)

    check = sub.add_parser("check", parents=[common],
                           help="run every served variant in Chromium's runtimes and compare with the server")
    check.add_argument("models", nargs="*", help="models to check (default: all)")
    check.add_argument("--runtimes", default=",".join(CHECKED), help=f"comma-separated: {', '.join(CHECKED)}")
    check.add_argument("--json", type=Path, default=None, help="write the report (JSON) here")
    check.add_argument("--html", type=Path, default=None, help="write the report (HTML) here (default: beside --json)")
    check.add_argument("--browsers", default=None,
                       help="comma-separated engines: chromium, firefox, webkit (default: the installed ones)")
    check.add_argument("--browser", default=None, help="Chromium executable (default: chromium on PATH)")
    check.add_argument("--timeout", type=float, default=3600,
                       help="seconds for the whole check; past it the finished rows are written, marked incomplete")
    check.add_argument("--row-timeout", type=float, default=300,
                       help="seconds for one row; a row past it is a `timeout` row and the rest go on")
    check.add_argument("--url", default=None, help="check against a running server instead of starting one")
    check.add_argument("--locate", action="store_true", help="for each failure, find the first diverging node")
    check.add_argument("--tolerances", type=Path, default=None, help="JSON overrides of the tolerance table")
    check.add_argument("--webgpu-rows", type=int, default=2, help="golden rows run on WebGPU (slow in software)")
    check.set_defaults(handler=_check)

    bench = sub.add_parser("bench", parents=[common], help="measure every path side by side (native, server, browser)")
    bench.add_argument("models", nargs="*", help="models to measure (default: all)")
    bench.add_argument("--json", type=Path, default=None, help="also write the report here")
    bench.add_argument("--runtimes", default=",".join(CHECKED), help="browser runtimes ('' for none)")
    bench.add_argument("--runs", type=int, default=30, help="timed runs per measurement (after warm-up)")
    bench.add_argument("--browsers", default=None,
                       help="comma-separated engines: chromium, firefox, webkit (default: the installed ones)")
    bench.add_argument("--browser", default=None, help="Chromium executable (default: chromium on PATH)")
    bench.add_argument("--engine", choices=["waitress", "ray"], default="waitress",
                       help="ray: also measure the server throughput table on Ray Serve (needs the ray extra)")
    bench.add_argument("--replicas", default="1,2",
                       help="with --engine ray: the replica counts to measure (default 1,2)")
    bench.set_defaults(handler=_bench)

    serve = sub.add_parser("serve", parents=[common], help="serve the web app, the artifacts and the V2 inference API")
    # Text here, parsed in _serve by the settings' own rules: one error line, the same values as ONNXPORT_*.
    serve.add_argument("--host", default=None, help="listen address (default 127.0.0.1, or $ONNXPORT_HOST)")
    serve.add_argument("--port", default=None,
                       help="listen port, 0 to 65535; 0 takes any free port and prints it (default 8000, "
                            "or $ONNXPORT_PORT)")
    serve.add_argument("--workers", type=int, default=None, help="request threads (default 8, or $ONNXPORT_WORKERS)")
    serve.add_argument("--cors-origins", default=None, metavar="ORIGIN[,ORIGIN...]",
                       help="origins (scheme://host[:port], or * for any) whose pages may use the files, the "
                            "library and the APIs cross-origin (default: none, or $ONNXPORT_CORS_ORIGINS)")
    serve.add_argument("--engine", choices=["waitress", "ray"], default="waitress",
                       help="waitress: this process, web app included (default); ray: the V2 API on Ray Serve")
    serve.add_argument("--replicas", type=int, default=1, help="with --engine ray: replicas (default 1)")
    serve.add_argument("--autoscale", default=None, metavar="MIN:MAX",
                       help="with --engine ray: autoscale between these")
    serve.add_argument("--address", default=None,
                       help="with --engine ray: an existing cluster (default: start a local one)")
    serve.add_argument("--artifacts-url", default=None, metavar="URL",
                       help="with --engine ray: replicas copy the repository from this published one (a CDN, or "
                            "a static server's /repository/), sha256-verified, into --repository")
    serve.add_argument("--max-ongoing-requests", type=int, default=None, metavar="N",
                       help="with --engine ray: requests one replica works on at once; "
                            "Ray queues the rest (default 32)")
    serve.set_defaults(handler=_serve)

    export = sub.add_parser("export", parents=[common], help="write the served variants for another engine")
    engines = export.add_subparsers(dest="engine", required=True, metavar="{triton,kserve}")
    to_triton = engines.add_parser("triton", help="a Triton model repository (config.pbtxt + 1/model.onnx per variant)")
    to_triton.add_argument("out", type=Path, help="new folder to write")
    to_triton.set_defaults(handler=_export_triton)
    to_kserve = engines.add_parser("kserve", help="the Triton repository plus a KServe InferenceService")
    to_kserve.add_argument("out", type=Path, help="new folder to write")
    to_kserve.add_argument("--storage-uri", required=True, help="where OUT/models will be uploaded (s3://, gs://, pvc://)")
    to_kserve.add_argument("--name", default="onnxport", help="the InferenceService name (default onnxport)")
    to_kserve.set_defaults(handler=_export_kserve)

    deploy = sub.add_parser("deploy", parents=[common], help="write what runs the V2 API on a cluster")
    targets = deploy.add_subparsers(dest="target", required=True, metavar="{ray}")
    to_ray = targets.add_parser("ray",
                                help="a Ray Serve config (serve.yaml) and a KubeRay RayService (rayservice.yaml)")
    to_ray.add_argument("--out", type=Path, required=True, help="new folder to write")
    to_ray.add_argument("--replicas", type=int, default=2, help="replicas (default 2)")
    to_ray.add_argument("--autoscale", default=None, metavar="MIN:MAX", help="autoscale between these instead")
    to_ray.add_argument("--port", type=int, default=8000, help="the Serve HTTP port (default 8000)")
    to_ray.add_argument("--max-ongoing-requests", type=int, default=32, metavar="N",
                        help="requests one replica works on at once; Ray queues the rest (default 32)")
    to_ray.add_argument("--image", required=True,
                        help="RayService container image; it must have onnxport installed")
    to_ray.add_argument("--workers", type=int, default=1, help="RayService worker pods (default 1)")
    to_ray.set_defaults(handler=_deploy_ray)

    init = sub.add_parser("init", help="write a new project folder: a recipe template in models/ and a README")
    init.add_argument("folder", type=Path, help="new (or empty) folder to write")
    init.set_defaults(handler=_init)
    return parser


def _build(args) -> int:
    from onnxport import text_tables
    from onnxport.convert.builder import build_recipes
    from onnxport.recipe import discover
    from onnxport.repository.names import check_recipe_targets
    from onnxport.repository.store import Repository

    if not args.recipes.exists():  # the default ./models too: a new user's first `onnxport build` points at init
        raise UsageError(f"--recipes {args.recipes}: no such folder; pass --recipes DIR, or make a project folder "
                         "with a recipe template: onnxport init DIR")
    _readable("--recipes", args.recipes, "folder")
    # Before any recipe runs: every name is a recipe, and a recipe must not silently take an imported model's place.
    recipes = discover(args.recipes)
    unknown = [n for n in args.models if n not in recipes]
    if unknown:
        raise UsageError(f"unknown model {', '.join(map(repr, unknown))}; recipes in {args.recipes}: "
                         f"{', '.join(recipes) or 'none'}")
    check_recipe_targets(Repository(args.repository).read_manifest(), args.models or list(recipes), args.replace)
    outcomes = build_recipes(args.models, Repository(args.repository), args.recipes, args.opset,
                             force=args.force, show_progress=not args.quiet, forms=args.forms,
                             variants=args.variants)
    if not args.quiet:
        print(text_tables.build_summary(outcomes))
        print("\n" + text_tables.disk_use([o.entry for o in outcomes], "build"))
    return 0


def _import(args) -> int:
    import dataclasses

    from onnxport import text_tables
    from onnxport.convert.builder import build_prepared, with_variants
    from onnxport.convert.intake.importer import import_key, prepare_import
    from onnxport.repository.names import check_import_target, check_name
    from onnxport.repository.store import Repository

    check_name(args.name, "--name")  # before any work: the name becomes paths and URLs
    _readable("", args.path, "file or folder")
    for option, path in (("--inputs", args.inputs), ("--calibration", args.calibration),
                         ("--pipeline", args.pipeline), *(("--asset", a) for a in args.assets)):
        if path is not None:
            _readable(option, path, "file or folder" if option in ("--inputs", "--calibration") else "file")
    description = _description(args.description)
    key = with_variants(_with_description(import_key(args.path, args.task, args.metric_output, args.calibration,
                                                     args.forms, args.inputs, args.pipeline, tuple(args.assets)),
                                          description), args.variants)
    check_import_target(Repository(args.repository).read_manifest(), args.name, key, args.replace)
    max_nodes, time_limit = _import_limits(args)

    def prepare(step):
        prepared = prepare_import(args.path, args.name, args.task, args.metric_output, key, step, args.calibration,
                                  args.forms, args.inputs, args.pipeline, tuple(args.assets), max_nodes)
        prepared = dataclasses.replace(prepared, variants=args.variants)
        return dataclasses.replace(prepared, description=description) if description else prepared

    outcome = build_prepared(Repository(args.repository), args.name, key, prepare, show_progress=not args.quiet,
                             time_limit=time_limit, limit_option="--time-limit, setting import_time_limit")
    if args.quiet:
        return 0
    print(text_tables.build_summary([outcome]))
    print("\n" + text_tables.disk_use([outcome.entry], "import ..."))
    warning = text_tables.synthetic_warning(outcome.entry)
    if warning:
        print(warning, file=sys.stderr)
    return 0


def _description(text: str | None) -> str | None:
    """--description: one line of at most DESCRIPTION_MAX characters, printable; a bad one exits 2 naming it."""
    if text is None:
        return None
    shown = text if len(text) <= 60 else text[:57] + "..."
    if not text.strip():
        raise UsageError("--description is empty; expected one line for people, e.g. 'Saliency map of a photo'")
    if any(not c.isprintable() for c in text):
        bad = next(c for c in text if not c.isprintable())
        raise UsageError(f"--description {shown!r}: has {bad!r}, which is not printable; expected one line of "
                         "text")
    if len(text.strip()) > DESCRIPTION_MAX:
        raise UsageError(f"--description {shown!r}: {len(text.strip())} characters, more than {DESCRIPTION_MAX}; "
                         "expected one line (the manifest's `description`; say more in your own docs)")
    return text.strip()


def _with_description(key: str, description: str | None) -> str:
    """The import's build key, changed by a description: the same file with another description is another
    import (skipped only when nothing it writes changes)."""
    if description is None:
        return key
    import hashlib

    return hashlib.sha256(f"{key}\0description\0{description}".encode()).hexdigest()


def _readable(option: str, path: Path, kind: str) -> None:
    """A file or folder named on the command line exists, is of the expected kind and can be read: checked
    before any work, and a usage error (exit 2) naming it otherwise."""
    named = f"{option} {path}" if option else str(path)
    if not path.exists():
        what = {"file": "no such file", "folder": "no such folder"}.get(kind, "no such file or folder")
        raise UsageError(f"{named}: {what}")
    if kind == "file" and not path.is_file():
        raise UsageError(f"{named}: is a folder; expected a file")
    if kind == "folder" and not path.is_dir():
        raise UsageError(f"{named}: is a file; expected a folder")
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise UsageError(f"{named}: not readable by this user")


def _import_limits(args) -> tuple[int, float]:
    """(most nodes, seconds) for an import: --max-nodes and --time-limit, else the settings (config file,
    ONNXPORT_IMPORT_*), parsed by the settings' own rules; a bad value exits 2 naming the option."""
    from onnxport.serving import config

    settings = {s.name: s for s in config.SETTINGS}
    overrides = {}
    for option, name, text in (("--max-nodes", "import_max_nodes", args.max_nodes),
                               ("--time-limit", "import_time_limit", args.time_limit)):
        if text is not None:
            try:
                overrides[name] = settings[name].parse(text)
            except ValueError as exc:
                raise UsageError(f"{option} {text!r}: {exc}") from exc
    loaded = config.load(overrides)
    return loaded["import_max_nodes"], loaded["import_time_limit"]


def _remove(args) -> int:
    from onnxport.repository.store import Repository, remove

    remove(Repository(args.repository), args.models)
    print(f"removed {', '.join(dict.fromkeys(args.models))} from {args.repository}; a running server stops serving "
          "them at its next request")
    return 0


def _list(args) -> int:
    from onnxport import text_tables
    from onnxport.repository.store import Repository

    manifest = Repository(args.repository).read_manifest()
    print(json.dumps(sorted(manifest["models"]), indent=2) if args.json else text_tables.model_list(manifest))
    return 0


def _info(args) -> int:
    from onnxport import text_tables
    from onnxport.repository.store import Repository

    manifest = Repository(args.repository).read_manifest()
    _known_models(manifest, [args.model])
    entry = manifest["models"][args.model]
    print(json.dumps(entry, indent=2, sort_keys=True) if args.json else text_tables.model_info(entry))
    return 0


def _known_models(manifest: dict, names: list[str], repository: Path | None = None) -> None:
    """Every model named on the command line is in the repository: a usage error (exit 2) listing them.
    With `repository`, the command works on every model by default, and an empty repository is refused
    too (a check or bench of it would wait for a server that is never ready)."""
    if repository is not None and not manifest["models"]:
        raise UsageError(f"no models in the repository {repository}; run `onnxport build` or `onnxport import` "
                         "first, or name another with --repository")
    unknown = [n for n in dict.fromkeys(names) if n not in manifest["models"]]
    if unknown:
        known = ", ".join(sorted(manifest["models"])) or "none (run `onnxport build`)"
        raise UsageError(f"unknown model {', '.join(map(repr, unknown))}; the repository has: {known}")


def _check(args) -> int:
    from onnxport.extras import require

    require("playwright", "check")  # before a server starts
    from onnxport.check import check_report
    from onnxport.check.check_run import FAILING, run_check
    from onnxport.check.row_stream import RowStream
    from onnxport.harness import engines

    wanted = engines.requested(args.browsers)  # the command line's mistakes first, then this machine's
    _check_chromium_given(args.browser)
    _check_output("--json", args.json)
    _check_output("--html", args.html)
    if args.tolerances is not None:
        _readable("--tolerances", args.tolerances, "file")
    if args.url is None:  # the check's own server serves this repository: its names, before the server starts
        from onnxport.repository.store import Repository

        _known_models(Repository(args.repository).read_manifest(), args.models, args.repository)
    with _sigterm_interrupts():
        report = run_check(
            repository=args.repository, url=args.url, models=args.models,
            runtimes=[r for r in args.runtimes.split(",") if r], browsers=wanted, browser=args.browser,
            webgpu_rows=args.webgpu_rows, find_divergence=args.locate, tolerances_file=args.tolerances,
            timeout_s=args.timeout, row_timeout_s=args.row_timeout, stream=RowStream(),
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


def _check_chromium_given(executable: str | None) -> None:
    """--browser, when given, names a Chromium that runs: refused before a server starts."""
    if executable:
        from onnxport.harness.chromium import executable_path

        if not Path(executable).exists():
            raise UsageError(f"--browser {executable}: no such file; expected a Chromium executable")
        executable_path(executable)


def _check_output(option: str, path: Path | None) -> None:
    """A report's file can be written, checked before minutes of measurement rather than after them."""
    if path is None:
        return
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; expected a file name, e.g. {path / 'report.json'}")
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{option} {path}: not writable here")


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM is a Ctrl-C while a check runs, so the server and browsers it started are stopped and the
    finished rows are kept."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may take signals
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _bench(args) -> int:
    from onnxport.extras import require
    from onnxport.harness import engines

    wanted = engines.requested(args.browsers) if args.runtimes else None
    if args.runtimes:  # browser runtimes to measure: the command line's mistakes first, then this machine's
        if wanted is None or {"chromium", "firefox"} & set(wanted):
            require("playwright", "bench")  # the extra to install, before a server starts
        _check_chromium_given(args.browser)
    _check_output("--json", args.json)
    from onnxport.repository.store import Repository

    _known_models(Repository(args.repository).read_manifest(), args.models, args.repository)
    replicas = None
    if args.engine == "ray":
        replicas = [int(n) for n in args.replicas.split(",") if n.strip().isdigit() and int(n) >= 1]
        if not replicas or len(replicas) != len(args.replicas.split(",")):
            raise UsageError(f"--replicas {args.replicas!r}: expected replica counts of at least 1, e.g. 1,2")
    browsers = None
    if args.runtimes:  # an engine that is not installed fails before a server starts
        browsers = engines.available(wanted)
    from onnxport.bench import bench_report
    from onnxport.bench.bench_run import run_bench, save_latest

    with _sigterm_interrupts():  # the server and browsers it started are stopped, as by Ctrl-C
        report = run_bench(args.repository, args.models, [r for r in args.runtimes.split(",") if r], args.runs,
                           args.browser, say=lambda line: print(f"... {line}", file=sys.stderr, flush=True),
                           ray_replicas=replicas, browsers=browsers)
    # Saved first: minutes of measurement must outlive any trouble printing them.
    latest = save_latest(args.repository, report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(bench_report.text(report))
    print(f"\nwrote {latest}" + (f" and {args.json}" if args.json else ""))
    return 0


SERVE_SETTINGS = {"--host": "host", "--port": "port", "--cors-origins": "cors_origins"}


def _serve_setting(option: str, text: str):
    """A serve option's value, parsed by its setting's rule (serving/config.py), so that `--port` and
    ONNXPORT_PORT accept the same values; a bad one is the user's to fix: exit 2 naming the option."""
    from onnxport.serving.config import SETTINGS

    setting = next(s for s in SETTINGS if s.name == SERVE_SETTINGS[option])
    try:
        return setting.parse(text)
    except ValueError as exc:
        raise UsageError(f"{option} {text!r}: {exc}") from exc


def _serve(args) -> int:
    # Only what was given on the command line overrides the config file and environment.
    overrides = {"repository": args.repository} if args.repository is not None else {}
    overrides.update({SERVE_SETTINGS[o]: _serve_setting(o, text) for o, text in
                      (("--host", args.host), ("--port", args.port), ("--cors-origins", args.cors_origins))
                      if text is not None})
    if args.workers is not None:
        overrides["workers"] = args.workers
    if args.artifacts_url is not None:
        overrides["artifacts_url"] = args.artifacts_url
    if args.engine == "ray":
        from onnxport.serving import config
        from onnxport.serving.ray.engine import MAX_ONGOING, parse_autoscale, serve_on_ray

        if args.cors_origins is not None:
            raise UsageError("--cors-origins is for the waitress engine: Ray Serve's V2 API sends no CORS "
                             "headers (let `onnxport serve` or a CDN serve other origins)")
        settings = config.load(overrides)
        if settings["port"] == 0:
            raise UsageError("port 0 (any free port) is for the waitress engine; --engine ray needs a fixed "
                             "--port from 1 to 65535")
        serve_on_ray(settings, args.replicas, parse_autoscale(args.autoscale), args.address,
                     args.max_ongoing_requests or MAX_ONGOING)
        return 0
    if args.replicas != 1 or args.autoscale or args.address or args.max_ongoing_requests or args.artifacts_url:
        raise UsageError("--replicas, --autoscale, --address, --max-ongoing-requests and --artifacts-url "
                         "are for --engine ray")
    from onnxport.serving.serve import serve

    serve(overrides)
    return 0


def _export_triton(args) -> int:
    from onnxport.deploy import triton
    from onnxport.repository.store import Repository

    names = triton.write_repository(Repository(args.repository), args.out)
    print(f"wrote a Triton model repository of {len(names)} models to {args.out}: {', '.join(names)}")
    return 0


def _export_kserve(args) -> int:
    from onnxport.deploy import kserve
    from onnxport.repository.store import Repository

    names = kserve.write_export(Repository(args.repository), args.out, args.storage_uri, args.name)
    print(f"wrote {args.out}/models ({len(names)} Triton models) and {args.out}/inferenceservice.yaml; "
          f"upload models/ to {args.storage_uri}, then `kubectl apply -f {args.out}/inferenceservice.yaml`")
    return 0


def _deploy_ray(args) -> int:
    from onnxport.deploy import ray_config
    from onnxport.serving.config import load
    from onnxport.serving.ray.engine import parse_autoscale

    repository = args.repository if args.repository is not None else load()["repository"]
    written = ray_config.write_deploy(args.out, repository, args.replicas, parse_autoscale(args.autoscale),
                                      args.port, args.image, args.workers, args.max_ongoing_requests)
    print(f"wrote {', '.join(f'{args.out}/{name}' for name in written)}: `serve deploy {args.out}/serve.yaml` on a Ray "
          f"cluster with onnxport installed, or `kubectl apply -f {args.out}/rayservice.yaml` with KubeRay")
    return 0


def _init(args) -> int:
    from onnxport.init_project import write_project

    written = write_project(args.folder)
    print(f"wrote {', '.join(str(p) for p in written)}; in {args.folder}: `onnxport build`, then `onnxport serve`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
