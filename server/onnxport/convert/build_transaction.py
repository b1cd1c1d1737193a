"""Several models in one repository transaction, all or none (one model: model_build.py; a variant: variant_maker.py).

The loop over models: it skips a model whose build key is already built, keeps the progress and the time limit,
and commits the manifest once.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from onnxport import recipe as recipes
from onnxport.convert import model_build
from onnxport.convert import time_limit as limits
from onnxport.convert.intake.sources import prepare_recipe, recipe_build_key
from onnxport.convert.prepared import Prepared, Progress
from onnxport.errors import BuildError, OnnxportError, RecipeError
from onnxport.progress import Steps
from onnxport.recipe import Recipe
from onnxport.repository import variant_table
from onnxport.repository.manifest import ModelEntry
from onnxport.repository.store import Repository
from onnxport.repository.variant_table import FORMS, NAMES

STEPS_PER_MODEL = 4 + len(variant_table.NAMES) + 1  # load, run, export, validate, variants, golden


@dataclass
class Outcome:
    name: str
    skipped: bool
    entry: ModelEntry


def known_recipes(recipes_dir: Path) -> dict[str, Path]:
    return recipes.discover(recipes_dir)


def build_recipes(
    names: list[str] | None,
    repository: Repository,
    recipes_dir: Path,
    opset: int,
    *,
    force: bool = False,
    show_progress: bool = True,
    forms: tuple[str, ...] = FORMS,
    variants: tuple[str, ...] = NAMES,
) -> list[Outcome]:
    available = known_recipes(recipes_dir)
    selected = names or list(available)
    unknown = [n for n in selected if n not in available]
    if unknown:
        raise RecipeError(
            f"unknown model {', '.join(map(repr, unknown))}; recipes in {recipes_dir}: {', '.join(available) or 'none'}"
        )
    loaded = [recipes.load_recipe(n, available[n]) for n in selected]

    def prepare(recipe: Recipe, key: str) -> Callable[[Progress], Prepared]:
        return lambda step: dataclasses.replace(
            prepare_recipe(recipe, opset, step, forms), build_key=key, variants=variants
        )

    keyed = [(r, with_variants(recipe_build_key(r, opset, forms), variants)) for r in loaded]
    return _build(
        repository, [(r.name, key, prepare(r, key)) for r, key in keyed], force=force, show_progress=show_progress
    )


def with_variants(key: str, variants: tuple[str, ...]) -> str:
    """A build key, changed by `--variants` other than all: the same model with fewer variants is another build.
    All of them leave the key as it was, so builds made before the option existed still count as done."""
    if variants == NAMES:
        return key
    return hashlib.sha256(f"{key}\0variants\0{','.join(variants)}".encode()).hexdigest()


def build_prepared(
    repository: Repository,
    name: str,
    key: str,
    prepare: Callable[[Progress], Prepared],
    *,
    force: bool = False,
    show_progress: bool = True,
    time_limit: float | None = None,
    limit_option: str = "time limit",
) -> Outcome:
    """One prepared model (an import), within time_limit seconds (None: no limit): past it, a BuildError
    naming limit_option (what sets the limit) and nothing is written."""
    return _build(
        repository,
        [(name, key, prepare)],
        force=force,
        show_progress=show_progress,
        time_limit=time_limit,
        limit_option=limit_option,
    )[0]


def _guarded(name: str, steps: Steps, function, *args):
    """Run a step of user or third-party code; a crash becomes one clear error naming the model and the step."""
    try:
        return function(*args)
    except OnnxportError:
        raise
    except Exception as exc:
        step = steps.label if steps.label != "start" else "build"
        raise BuildError(f"{name}: {step} failed: {type(exc).__name__}: {exc}") from exc


def _build(
    repository,
    jobs,
    *,
    force: bool,
    show_progress: bool,
    time_limit: float | None = None,
    limit_option: str = "time limit",
) -> list[Outcome]:
    outcomes = []
    doing = {"model": "", "step": "start"}  # where the time limit found the build, for its message

    def expired() -> str:
        return (
            f"{doing['model']}: not done within the time limit of {time_limit:g} s ({limit_option}); stopped "
            f"at step {doing['step']!r}; nothing was written"
        )

    with repository.transaction() as transaction:
        manifest = repository.read_manifest()
        # The commit is outside the limit: once every model is made, writing them takes moments.
        with limits.time_limit(time_limit, expired):
            for name, key, prepare in jobs:
                current = manifest["models"].get(name)
                if not force and current and current.get("build_key") == key and repository.has_files(current):
                    outcomes.append(Outcome(name, True, current))
                    continue
                doing.update(model=name, step="start")
                with Steps(name, STEPS_PER_MODEL, enabled=show_progress) as steps:

                    def step(label: str, steps=steps) -> None:
                        doing["step"] = label
                        steps.step(label)

                    prepared = _guarded(name, steps, prepare, step)
                    entry = _guarded(name, steps, model_build.build, prepared, transaction, step)
                manifest["models"][name] = entry
                outcomes.append(Outcome(name, False, entry))
        if any(not o.skipped for o in outcomes):
            transaction.commit(manifest)
    return outcomes
