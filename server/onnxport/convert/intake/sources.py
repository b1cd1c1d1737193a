"""Turn a recipe into a Prepared model: load the source, run it, export it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from onnxport.convert.intake.export import export
from onnxport.convert.intake.tools import build_tools, tool_versions
from onnxport.convert.prepared import Prepared, Progress
from onnxport.errors import RecipeError
from onnxport.json_boundary import JsonObject
from onnxport.recipe import Feeds, Recipe
from onnxport.repository.variant_table import FORMS

# Bump when the build changes what it writes for the same recipe.
BUILD_FORMAT = 3  # 2: `playground` and `bench_inputs` in the model entry; 3: a served variant's `forms`
# The parts of the package whose code decides what a build writes: convert with its family folders, and the
# modules of accuracy, repository and the package's top level.
BUILD_CODE = ("convert/**/*.py", "accuracy/*.py", "repository/*.py", "*.py")


def build_code_sha256() -> str:
    """The build's own code is part of what decides its output."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[2]
    for pattern in BUILD_CODE:
        for path in sorted(package.glob(pattern)):
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def build_key(parts: JsonObject) -> str:
    """What decides the build's bytes; the same key means the build can be skipped."""
    payload = {"build_format": BUILD_FORMAT, "code": build_code_sha256(), "tools": tool_versions(), **parts}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def prepare_recipe(recipe: Recipe, opset: int, step: Progress, forms: tuple[str, ...] = FORMS) -> Prepared:
    step("load source model")
    source = recipe.load()
    # Source outputs are computed before export: tracing can change a model instance.
    step("run source model")
    source_outputs = source.run(source.golden_inputs)
    step(f"export to ONNX (opset {opset})")
    fp32 = export(source, opset)
    recipe_sha = recipe.source_sha256()
    return Prepared(
        name=recipe.name,
        task=recipe.task,
        kind=source.framework,
        description=recipe.description,
        fp32=fp32,
        golden_inputs=[source.golden_inputs],
        source_outputs=[source_outputs],
        calibration=source.calibration_inputs,
        tolerance=recipe.tolerance,
        metric_output=recipe.metric_output,
        build_key=recipe_build_key(recipe, opset, forms),
        labels=source.golden_labels,
        facts=source.facts,
        provenance={
            "recipe": str(recipe.path.name) if recipe.path else None,
            "recipe_sha256": recipe_sha,
            "opset_requested": opset,
            "tools": build_tools(source.framework, recipe.path),  # what this build used, not all installed
            "calibration_sha256": _feeds_sha256(source.calibration_inputs),
        },
        int8_static_keep_float=recipe.int8_static_keep_float,
        assets={label: Path(p) for label, p in source.assets.items()},
        playground=recipe.playground,
        bench_inputs=bench_inputs(recipe),
        transformer=recipe.transformer,
        pipeline=recipe.pipeline,
        forms=forms,
    )


def recipe_build_key(recipe: Recipe, opset: int, forms: tuple[str, ...] = FORMS) -> str:
    # The declarations themselves, not only the recipe file: bench inputs may come from another module.
    bench = bench_inputs(recipe)
    return build_key(
        {
            "recipe_sha256": recipe.source_sha256(),
            "opset": opset,
            "playground": recipe.playground,
            "transformer": recipe.transformer,
            "pipeline": recipe.pipeline,
            "forms": list(forms),
            "bench_inputs_sha256": _feeds_sha256([bench]) if bench is not None else None,
        }
    )


def bench_inputs(recipe: Recipe) -> Feeds | None:
    """The recipe's bench inputs, or None; a crash or a wrong type is the recipe's error, said in one line."""
    if recipe.bench_inputs is None:
        return None
    try:
        feeds = recipe.bench_inputs()
    except Exception as exc:
        raise RecipeError(f"recipe {recipe.name!r}: bench_inputs() failed: {type(exc).__name__}: {exc}") from exc
    if (
        not isinstance(feeds, dict)
        or not feeds
        or not all(isinstance(k, str) and isinstance(v, np.ndarray) for k, v in feeds.items())
    ):
        raise RecipeError(
            f"recipe {recipe.name!r}: bench_inputs() must return {{input name: numpy array}}, "
            f"got {type(feeds).__name__}"
        )
    return feeds


def _feeds_sha256(feeds: list[dict]) -> str:
    digest = hashlib.sha256()
    for feed in feeds:
        for name in sorted(feed):
            digest.update(name.encode() + b"\0" + str(feed[name].dtype).encode() + str(feed[name].shape).encode())
            digest.update(feed[name].tobytes())
    return digest.hexdigest()
