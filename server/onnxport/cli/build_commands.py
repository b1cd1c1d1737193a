"""`onnxport build` and `onnxport import`: models made into the repository."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from typing import Callable

from onnxport.convert.intake.request import readable
from onnxport.errors import UsageError
from onnxport.repository import atomic, layout
from onnxport.repository.store import Repository


def build(args) -> int:
    from onnxport import text_tables
    from onnxport.convert.build_transaction import build_recipes
    from onnxport.recipe import DecoderRecipe, discover, load_any_recipe
    from onnxport.repository.names import check_recipe_targets

    if not args.recipes.exists():  # the default ./models too: a new user's first `onnxport build` points at init
        raise UsageError(
            f"--recipes {args.recipes}: no such folder; pass --recipes DIR, or make a project folder "
            "with a recipe template: onnxport init DIR"
        )
    readable("--recipes", args.recipes, "folder")
    # Before any recipe runs: every name is a recipe, and a recipe must not silently take an imported model's place.
    recipes = discover(args.recipes)
    unknown = [n for n in args.models if n not in recipes]
    if unknown:
        raise UsageError(
            f"unknown model {', '.join(map(repr, unknown))}; recipes in {args.recipes}: {', '.join(recipes) or 'none'}"
        )
    selected = args.models or list(recipes)
    check_recipe_targets(Repository(args.repository).read_manifest(), selected, args.replace)
    # Decoder recipes (models-decoders/) are built apart: a GGUF file and its variants judged by what they generate.
    decoders = [r for r in (load_any_recipe(n, recipes[n]) for n in selected) if isinstance(r, DecoderRecipe)]
    # --variants narrows a decoder's variants as a model's (fp32, the reference, is always made).
    decoders = [dataclasses.replace(r, variants=tuple(v for v in r.variants if v in args.variants)) for r in decoders]
    models = [n for n in selected if n not in {r.name for r in decoders}]
    if decoders:
        _build_decoders(args, decoders)
    if not models:
        return 0
    outcomes = build_recipes(
        models,
        Repository(args.repository),
        args.recipes,
        args.opset,
        force=args.force,
        show_progress=not args.quiet,
        forms=args.forms,
        variants=args.variants,
    )
    if not args.quiet:
        print(text_tables.build_summary(outcomes))
        print("\n" + text_tables.disk_use([o.entry for o in outcomes], "build"))
    return 0


def _build_decoders(args, decoders) -> None:
    from onnxport import text_tables
    from onnxport.convert.decoder_build import build_decoders

    outcomes = build_decoders(decoders, Repository(args.repository), force=args.force, show_progress=not args.quiet)
    if not args.quiet:
        for outcome in outcomes:
            done = "up to date" if outcome.skipped else f"built in {outcome.seconds:g} s"
            print(f"{outcome.name} (generation, {done}):")
            print(text_tables.decoder_variants(outcome.entry))


def import_model(args) -> int:
    from onnxport import text_tables
    from onnxport.convert import sandbox
    from onnxport.convert.build_transaction import Outcome, build_prepared, with_variants
    from onnxport.convert.intake.importer import import_key, prepare_import
    from onnxport.convert.intake.request import ImportRequest, LimitSettings
    from onnxport.convert.prepared import Prepared
    from onnxport.repository.names import check_import_target
    from onnxport.serving import config

    # The one place the command line becomes an import: every option checked, before any work.
    request = ImportRequest.checked(args, LimitSettings({s.name: s.parse for s in config.SETTINGS}, config.load))
    key = with_variants(import_key(request), request.variants)
    repository = Repository(args.repository)
    check_import_target(repository.read_manifest(), request.name, key, request.replace)

    def work(reached: Callable[[str], None]) -> Outcome:
        def prepare(bar: Callable[[str], None]) -> Prepared:
            def step(label: str) -> None:
                reached(label)  # where the child was, for the line its crash becomes
                bar(label)

            prepared = prepare_import(request, key, step)
            reached("build the variants")
            return prepared

        return build_prepared(
            _LockedByParent(repository.root),
            request.name,
            key,
            prepare,
            show_progress=not args.quiet,
            time_limit=request.time_limit,
            limit_option="--time-limit, setting import_time_limit",
        )

    # The native parsers and onnxruntime meet the user's file in a child process under limits (convert/sandbox.py).
    limits = sandbox.Limits(
        memory=request.memory_limit or None, cpu=request.cpu_limit or None, wall=request.time_limit or None
    )
    # The lock is held here, not in the child (which closes its copy): `kill -9` of this process frees it at once,
    # and after the child's death what it staged is cleared under it.
    with repository.lock():
        outcome = sandbox.run_limited(
            work,
            limits,
            str(request.path),
            after_failure=lambda: atomic.clear_leftovers(repository.root),
            close_in_child=repository.root / layout.LOCK_FILE,
        )
    if args.quiet:
        return 0
    print(text_tables.build_summary([outcome]))
    print("\n" + text_tables.disk_use([outcome.entry], "import ..."))
    warning = text_tables.synthetic_warning(outcome.entry)
    if warning:
        print(warning, file=sys.stderr)
    return 0


class _LockedByParent(Repository):
    """The repository as the import's child writes it: its parent holds the one-writer lock for it (taking it
    again here would be a second writer, refused)."""

    def lock(self, *, wait: bool = False) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()
