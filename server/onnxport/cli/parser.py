"""The `onnxport` command line: every command and its options, one small function per command.

Each command's handler comes from its family's module (build_commands, repository_commands, check_commands,
serve_commands); argparse calls it with the parsed options (`args.handler(args)` in cli/__init__.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from onnxport.accuracy.browser_runtimes import CHECKED
from onnxport.cli import build_commands, check_commands, decoder_commands, repository_commands, serve_commands
from onnxport.repository import variant_table

DEFAULT_REPOSITORY_ENV = "ONNXPORT_REPOSITORY"
FORMS_HELP = (
    "optimized forms of each served variant, for browsers to start sooner (each costs about the "
    "variant's size on disk): auto (default: each form kept only if onnxruntime starts it at least 10%% "
    "and 5 ms sooner than the variant as built; gemm, tree ensembles as tensor operators, kept as the "
    "form WebGPU runs), all, none, or a comma-separated list of ort, basic, fused, gemm (kept whatever "
    "they gain)"
)
VARIANTS_HELP = (
    "the variants to make: all (default), or a comma-separated list of "
    + ", ".join(variant_table.NAMES)
    + "; fp32 is always made, the others are listed as skipped (a large model's int8 search "
    "can take minutes)"
)
QUIET_HELP = "print nothing but errors: no progress bars, no tables, no warnings (`onnxport info NAME` has it all)"


class OneLineParser(argparse.ArgumentParser):
    """argparse's usage errors as every other usage error: one `onnxport: error:` line and exit 2, not the whole
    usage first (a dozen lines that bury the one that matters); --help still prints it."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("onnxport").strip()
        where = f"{command}: " if command else ""
        self.exit(
            2,
            f"onnxport: error: {where}{message}; `{self.prog} --help` lists the "
            f"{'options' if command else 'commands and options'}\n",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="onnxport", description="Export once, run anywhere: build, serve and check ONNX models."
    )
    parser.add_argument(
        "--repository",
        type=Path,
        default=None,
        help=f"model repository folder (default: models/.repository in onnxport's checkout, "
        f"./onnxport-repository elsewhere; ${DEFAULT_REPOSITORY_ENV}, or the config file's "
        "`repository`)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    # --repository is accepted after the command too (`onnxport serve --repository DIR`).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--repository", type=Path, default=argparse.SUPPRESS, help="model repository folder")
    for command in (_build, _import, _remove, _list, _info, _check, _bench, _serve, _export, _deploy):
        command(sub, common)
    decoder_commands.add_parser(sub, common)
    _init(sub)
    return parser


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


def _forms_and_variants(command: argparse.ArgumentParser) -> None:
    """--quiet, --forms and --variants: build and import take them alike."""
    from onnxport.repository.variant_table import AUTO, NAMES

    command.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    command.add_argument("--forms", type=_forms, default=AUTO, metavar="LIST", help=FORMS_HELP)
    command.add_argument("--variants", type=_variants, default=NAMES, metavar="LIST", help=VARIANTS_HELP)


def _build(sub, common) -> None:
    from onnxport.convert.intake.export import DEFAULT_OPSET
    from onnxport.recipe import default_recipes_dir

    build = sub.add_parser("build", parents=[common], help="build demo and recipe models into the repository")
    build.add_argument("models", nargs="*", help="recipe names (default: all)")
    build.add_argument("--recipes", type=Path, default=default_recipes_dir(), help="folder of recipe modules")
    build.add_argument(
        "--opset", type=int, default=DEFAULT_OPSET, help=f"ONNX opset to export to (default {DEFAULT_OPSET})"
    )
    build.add_argument("--force", action="store_true", help="rebuild even when the recipe is unchanged")
    _forms_and_variants(build)
    build.add_argument("--replace", action="store_true", help="replace imported models that have a recipe's name")
    build.set_defaults(handler=build_commands.build)


def _import(sub, common) -> None:
    from onnxport.convert.intake.request import DESCRIPTION_MAX
    from onnxport.recipe import TASKS

    imp = sub.add_parser(
        "import",
        parents=[common],
        help="import an .onnx file, an ONNX test directory, or a LightGBM or XGBoost model file",
    )
    imp.add_argument("path", type=Path)
    imp.add_argument(
        "--name",
        required=True,
        help="model name in the repository: 1 to 64 of a-z 0-9 . _ -, starting with a letter or digit",
    )
    imp.add_argument(
        "--replace", action="store_true", help="replace a model of the same name already in the repository"
    )
    imp.add_argument("--task", default="generic", choices=TASKS)
    imp.add_argument(
        "--metric-output",
        default=None,
        help="output that carries the task metric, one of the model's outputs (default: the first float one)",
    )
    imp.add_argument(
        "--inputs",
        type=Path,
        default=None,
        metavar="FILE.npz|FILE.npy|DIR",
        help="evaluation (golden) inputs: a .npz with one array per input name (or '<set>/<input>' "
        "keys), a .npy (one-input models), or a folder of .npz files or test_data_set_* folders; "
        "checked against the model's inputs (default: a test directory's sets, else seeded "
        "random inputs, reported as synthetic)",
    )
    imp.add_argument(
        "--calibration",
        type=Path,
        default=None,
        metavar="FILE.npz|FILE.npy|DIR",
        help="static int8 calibration inputs, in the same forms as --inputs (default: the golden inputs)",
    )
    imp.add_argument(
        "--pipeline",
        type=Path,
        default=None,
        metavar="SPEC.json",
        help="how raw text or an image becomes the model's inputs and its output an answer (the "
        "manifest's `pipeline`, docs/reference/manifest.md); checked against the model and --asset files",
    )
    imp.add_argument(
        "--asset",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        dest="assets",
        help="a file published beside the model under its file name, e.g. tokenizer.json (repeatable)",
    )
    imp.add_argument(
        "--description",
        default=None,
        metavar="TEXT",
        help=f"one line for people, shown by `onnxport info` and the web app (at most {DESCRIPTION_MAX} "
        "characters; default: 'Imported from FILE')",
    )
    _forms_and_variants(imp)
    imp.add_argument(
        "--max-nodes",
        default=None,
        metavar="N",
        help="most nodes (subgraphs included) the model may have; a bigger one is refused before any "
        "work (default 50000, or the import_max_nodes setting)",
    )
    imp.add_argument(
        "--time-limit",
        default=None,
        metavar="SECONDS",
        help="stop the import after this many seconds, writing nothing; 0: no limit (default 1800, "
        "or the import_time_limit setting)",
    )
    imp.add_argument(
        "--memory-limit",
        default=None,
        metavar="BYTES",
        help="address space the import's process may map (e.g. 8GiB, 512MiB); past it, it stops, "
        "writing nothing; 0: no limit (default 8GiB, or the import_memory_limit setting)",
    )
    imp.add_argument(
        "--cpu-limit",
        default=None,
        metavar="SECONDS",
        help="CPU seconds (all threads) the import's process may use, writing nothing past them; "
        "0: no limit (default 7200, or the import_cpu_limit setting)",
    )
    imp.set_defaults(handler=build_commands.import_model)


def _remove(sub, common) -> None:
    rm = sub.add_parser("remove", parents=[common], help="remove models from the repository (all or none)")
    rm.add_argument("models", nargs="+", metavar="NAME", help="model names (`onnxport list` lists them)")
    rm.set_defaults(handler=repository_commands.remove)


def _list(sub, common) -> None:
    lst = sub.add_parser("list", parents=[common], help="list models in the repository")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=repository_commands.list_models)


def _info(sub, common) -> None:
    info = sub.add_parser("info", parents=[common], help="a model's metadata and variant table")
    info.add_argument("model")
    info.add_argument("--json", action="store_true")
    info.set_defaults(handler=repository_commands.info)


def _browsers(command: argparse.ArgumentParser) -> None:
    """--browsers and --browser: check and bench drive the same engines."""
    command.add_argument(
        "--browsers",
        default=None,
        help="comma-separated engines: chromium, firefox, webkit (default: the installed ones)",
    )
    command.add_argument("--browser", default=None, help="Chromium executable (default: chromium on PATH)")


def _check(sub, common) -> None:
    check = sub.add_parser(
        "check", parents=[common], help="run every served variant in Chromium's runtimes and compare with the server"
    )
    check.add_argument("models", nargs="*", help="models to check (default: all)")
    check.add_argument(
        "--runtimes",
        default=",".join(CHECKED),
        help=f"comma-separated: {', '.join(CHECKED)}; `server` alone runs the server's rows only, no browser",
    )
    check.add_argument("--json", type=Path, default=None, help="write the report (JSON) here")
    check.add_argument("--html", type=Path, default=None, help="write the report (HTML) here (default: beside --json)")
    _browsers(check)
    check.add_argument(
        "--timeout",
        type=float,
        default=3600,
        help="seconds for the whole check; past it the finished rows are written, marked incomplete",
    )
    check.add_argument(
        "--row-timeout",
        type=float,
        default=300,
        help="seconds for one row; a row past it is a `timeout` row and the rest go on",
    )
    check.add_argument("--url", default=None, help="check against a running server instead of starting one")
    check.add_argument("--locate", action="store_true", help="for each failure, find the first diverging node")
    check.add_argument("--tolerances", type=Path, default=None, help="JSON overrides of the tolerance table")
    check.add_argument("--webgpu-rows", type=int, default=2, help="golden rows run on WebGPU (slow in software)")
    check.add_argument(
        "--full-webgpu",
        action="store_true",
        help="on a software WebGPU adapter (no GPU: SwiftShader, lavapipe) run every variant and form "
        "on WebGPU, not one row per model (up to a minute per row)",
    )
    check.set_defaults(handler=check_commands.check)


def _bench(sub, common) -> None:
    bench = sub.add_parser("bench", parents=[common], help="measure every path side by side (native, server, browser)")
    bench.add_argument("models", nargs="*", help="models to measure (default: all)")
    bench.add_argument("--json", type=Path, default=None, help="also write the report here")
    bench.add_argument("--runtimes", default=",".join(CHECKED), help="browser runtimes ('' for none)")
    bench.add_argument(
        "--runs",
        type=int,
        default=None,
        help="timed runs per measurement, after warm-up (default 30; 5 rounds with --generation)",
    )
    _browsers(bench)
    decoder_commands.add_bench_options(bench)
    bench.add_argument(
        "--engine",
        choices=["waitress", "ray"],
        default="waitress",
        help="ray: also measure the server throughput table on Ray Serve (needs the ray extra)",
    )
    bench.add_argument(
        "--replicas", default="1,2", help="with --engine ray: the replica counts to measure (default 1,2)"
    )
    bench.set_defaults(handler=check_commands.bench)


def _serve(sub, common) -> None:
    serve = sub.add_parser("serve", parents=[common], help="serve the web app, the artifacts and the V2 inference API")
    # Text here, parsed in serve_commands by the settings' own rules: one error line, the same values as ONNXPORT_*.
    serve.add_argument("--host", default=None, help="listen address (default 127.0.0.1, or $ONNXPORT_HOST)")
    serve.add_argument(
        "--port",
        default=None,
        help="listen port, 0 to 65535; 0 takes any free port and prints it (default 8000, or $ONNXPORT_PORT)",
    )
    serve.add_argument("--workers", type=int, default=None, help="request threads (default 8, or $ONNXPORT_WORKERS)")
    serve.add_argument(
        "--cors-origins",
        default=None,
        metavar="ORIGIN[,ORIGIN...]",
        help="origins (scheme://host[:port], or * for any) whose pages may use the files, the "
        "library and the APIs cross-origin (default: none, or $ONNXPORT_CORS_ORIGINS)",
    )
    serve.add_argument(
        "--engine",
        choices=["waitress", "ray"],
        default="waitress",
        help="waitress: this process, web app included (default); ray: the V2 API on Ray Serve",
    )
    serve.add_argument("--replicas", type=int, default=1, help="with --engine ray: replicas (default 1)")
    serve.add_argument(
        "--autoscale", default=None, metavar="MIN:MAX", help="with --engine ray: autoscale between these"
    )
    serve.add_argument(
        "--address", default=None, help="with --engine ray: an existing cluster (default: start a local one)"
    )
    serve.add_argument(
        "--artifacts-url",
        default=None,
        metavar="URL",
        help="with --engine ray: replicas copy the repository from this published one (a CDN, or "
        "a static server's /repository/), sha256-verified, into --repository",
    )
    serve.add_argument(
        "--max-ongoing-requests",
        type=int,
        default=None,
        metavar="N",
        help="with --engine ray: requests one replica works on at once; Ray queues the rest (default 32)",
    )
    serve.set_defaults(handler=serve_commands.serve)


def _export(sub, common) -> None:
    export = sub.add_parser("export", parents=[common], help="write the served variants for another engine")
    engines = export.add_subparsers(dest="engine", required=True, metavar="{triton,kserve}")
    to_triton = engines.add_parser("triton", help="a Triton model repository (config.pbtxt + 1/model.onnx per variant)")
    to_triton.add_argument("out", type=Path, help="new folder to write")
    to_triton.set_defaults(handler=serve_commands.export_triton)
    to_kserve = engines.add_parser("kserve", help="the Triton repository plus a KServe InferenceService")
    to_kserve.add_argument("out", type=Path, help="new folder to write")
    to_kserve.add_argument(
        "--storage-uri", required=True, help="where OUT/models will be uploaded (s3://, gs://, pvc://)"
    )
    to_kserve.add_argument("--name", default="onnxport", help="the InferenceService name (default onnxport)")
    to_kserve.set_defaults(handler=serve_commands.export_kserve)


def _deploy(sub, common) -> None:
    deploy = sub.add_parser("deploy", parents=[common], help="write what runs the V2 API on a cluster")
    targets = deploy.add_subparsers(dest="target", required=True, metavar="{ray}")
    to_ray = targets.add_parser(
        "ray", help="a Ray Serve config (serve.yaml) and a KubeRay RayService (rayservice.yaml)"
    )
    to_ray.add_argument("--out", type=Path, required=True, help="new folder to write")
    to_ray.add_argument("--replicas", type=int, default=2, help="replicas (default 2)")
    to_ray.add_argument("--autoscale", default=None, metavar="MIN:MAX", help="autoscale between these instead")
    to_ray.add_argument("--port", type=int, default=8000, help="the Serve HTTP port (default 8000)")
    to_ray.add_argument(
        "--max-ongoing-requests",
        type=int,
        default=32,
        metavar="N",
        help="requests one replica works on at once; Ray queues the rest (default 32)",
    )
    to_ray.add_argument("--image", required=True, help="RayService container image; it must have onnxport installed")
    to_ray.add_argument("--workers", type=int, default=1, help="RayService worker pods (default 1)")
    to_ray.set_defaults(handler=serve_commands.deploy_ray)


def _init(sub) -> None:
    init = sub.add_parser("init", help="write a new project folder: a recipe template in models/ and a README")
    init.add_argument("folder", type=Path, help="new (or empty) folder to write")
    init.set_defaults(handler=serve_commands.init)
