"""`onnxport build` and `onnxport import`: models made into the repository."""

from __future__ import annotations

import sys

from onnxport.cli.option_checks import readable
from onnxport.errors import UsageError

# An imported model's one line for people (the manifest's `description`, shown by info and the pages).
DESCRIPTION_MAX = 200


def build(args) -> int:
    from onnxport import text_tables
    from onnxport.convert.builder import build_recipes
    from onnxport.recipe import discover
    from onnxport.repository.names import check_recipe_targets
    from onnxport.repository.store import Repository

    if not args.recipes.exists():  # the default ./models too: a new user's first `onnxport build` points at init
        raise UsageError(f"--recipes {args.recipes}: no such folder; pass --recipes DIR, or make a project folder "
                         "with a recipe template: onnxport init DIR")
    readable("--recipes", args.recipes, "folder")
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


def import_model(args) -> int:
    import dataclasses

    from onnxport import text_tables
    from onnxport.convert.builder import build_prepared, with_variants
    from onnxport.convert.intake.importer import import_key, prepare_import
    from onnxport.repository.names import check_import_target, check_name
    from onnxport.repository.store import Repository

    check_name(args.name, "--name")  # before any work: the name becomes paths and URLs
    readable("", args.path, "file or folder")
    for option, path in (("--inputs", args.inputs), ("--calibration", args.calibration),
                         ("--pipeline", args.pipeline), *(("--asset", a) for a in args.assets)):
        if path is not None:
            readable(option, path, "file or folder" if option in ("--inputs", "--calibration") else "file")
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
