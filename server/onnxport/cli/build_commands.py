"""`onnxport build` and `onnxport import`: models made into the repository."""

from __future__ import annotations

import sys

from onnxport.convert.intake.request import readable
from onnxport.errors import UsageError


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
    from onnxport import text_tables
    from onnxport.convert.builder import build_prepared, with_variants
    from onnxport.convert.intake.importer import import_key, prepare_import
    from onnxport.convert.intake.request import ImportRequest, LimitSettings
    from onnxport.repository.names import check_import_target
    from onnxport.repository.store import Repository
    from onnxport.serving import config

    # The one place the command line becomes an import: every option checked, before any work.
    request = ImportRequest.checked(args, LimitSettings({s.name: s.parse for s in config.SETTINGS}, config.load))
    key = with_variants(import_key(request), request.variants)
    repository = Repository(args.repository)
    check_import_target(repository.read_manifest(), request.name, key, request.replace)
    outcome = build_prepared(repository, request.name, key, lambda step: prepare_import(request, key, step),
                             show_progress=not args.quiet, time_limit=request.time_limit,
                             limit_option="--time-limit, setting import_time_limit")
    if args.quiet:
        return 0
    print(text_tables.build_summary([outcome]))
    print("\n" + text_tables.disk_use([outcome.entry], "import ..."))
    warning = text_tables.synthetic_warning(outcome.entry)
    if warning:
        print(warning, file=sys.stderr)
    return 0
