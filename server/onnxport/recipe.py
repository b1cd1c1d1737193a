"""The recipe contract: what a module in `models/` declares.

A recipe module defines `RECIPE = Recipe(...)`. Loading the source model is
deferred to `Recipe.load()` so that listing recipes trains nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from onnxport.accuracy.tolerance import Tolerance
from onnxport.errors import RecipeError
from onnxport.json_boundary import JsonObject
from onnxport.pipelines import spec_check
from onnxport.pipelines.spec import SpecError
from onnxport.project import PROJECT_ROOT

# What a recipe may declare is what the manifest can say (its vocabulary lives with its types).
from onnxport.repository.manifest import PLAYGROUNDS, TASKS
from onnxport.repository.names import RULE_TEXT, name_problem

Feeds = dict[str, np.ndarray]
__all__ = ["DecoderRecipe", "Feeds", "Recipe", "SourceModel", "Tolerance"]
# The weight-only variants a decoder recipe may ask for (onnxport/variants.py's rows; convert/decoder_build.py).
DECODER_VARIANTS: tuple[str, ...] = ("int8-weights", "int4")


@dataclass
class SourceModel:
    """A trained or loaded model in its own framework, ready to export."""

    framework: str
    model: Any
    input_names: list[str]
    output_names: list[str]
    # {input or output name: {axis index: axis name}}, as torch.onnx names it.
    dynamic_axes: dict[str, dict[int, str]]
    sample_inputs: Feeds
    golden_inputs: Feeds
    calibration_inputs: list[Feeds]
    # Runs the source framework: the reference every export is measured against.
    run: Callable[[Feeds], dict[str, np.ndarray]]
    # Facts about the source worth publishing (test accuracy, data set...).
    facts: JsonObject = field(default_factory=dict)  # published as written (the manifest's `facts`)
    # Ground-truth labels of the golden inputs, for classifiers.
    golden_labels: np.ndarray | None = None
    # Files published beside the model (tokenizer files...): label -> path.
    assets: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    name: str
    task: str
    description: str
    load: Callable[[], SourceModel]
    tolerance: Tolerance
    # The output whose values carry the task metric (logits, probabilities, embedding).
    metric_output: str
    # Regular expressions of node names that static int8 always leaves in float, for nodes a
    # recipe author knows one 8-bit range cannot hold. Rarely needed: a variant outside its
    # budget goes to the fallback search (convert/rescue/fallback.py), which keeps nodes in float itself.
    int8_static_keep_float: tuple[str, ...] = ()
    # The playground's input widget for this model, one of PLAYGROUNDS.
    playground: str = "generic"
    # The batch-1 inputs `onnxport bench` measures every path with, written into the manifest
    # (`bench_inputs`); None = the first row of the golden inputs. Called without loading the
    # model (it is part of the build key), so it must be cheap and deterministic.
    bench_inputs: Callable[[], Feeds] | None = None
    # A transformer's shape for onnxruntime's transformer optimizer, which makes the fp32 variant's
    # `fused` form (convert/forms/): {"model_type": "bert", "num_heads": 12, "hidden_size": 384}.
    transformer: JsonObject | None = None
    # How raw input (text, an image) becomes the model's tensors and its output an answer: the manifest's
    # `pipeline` (onnxport/pipelines/spec.py, docs/reference/manifest.md). Checked against the model at build
    # (spec_check.py).
    pipeline: JsonObject | None = None  # as the author wrote it, checked at build
    path: Path | None = None

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise RecipeError(f"recipe {self.name!r}: task {self.task!r} is not one of {', '.join(TASKS)}")
        if self.playground not in PLAYGROUNDS:
            raise RecipeError(
                f"recipe {self.name!r}: playground {self.playground!r} is not one of {', '.join(PLAYGROUNDS)}"
            )
        if self.pipeline is not None:
            try:
                spec_check.validate(self.pipeline, f"recipe {self.name!r}")
            except SpecError as exc:
                raise RecipeError(str(exc)) from None

    def source_sha256(self) -> str:
        if self.path is None:
            return ""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class DecoderRecipe:
    """A decoder for generation (`models-decoders/`): a GGUF file made a checked fp32 decoder, and its weight-only
    variants judged against it by what they generate (convert/decoder_build.py, accuracy/budgets.py GENERATION)."""

    name: str
    description: str
    gguf: Path  # the GGUF file; a relative path is the project's (PROJECT_ROOT)
    prompts: tuple[str, ...]  # greedy continuations of these are compared with fp32's
    held_out: Callable[[], str]  # the text whose next tokens are scored; called at build (deferred, as load())
    new_tokens: int = 24  # per prompt
    variants: tuple[str, ...] = DECODER_VARIANTS
    chat: bool = True  # the prompts are a user's messages, put through the model's chat template
    check_steps: int = 8  # cached steps of the export's check against the source
    path: Path | None = None

    def __post_init__(self) -> None:
        where = f"decoder recipe {self.name!r}"
        if not self.prompts or not all(isinstance(p, str) and p for p in self.prompts):
            raise RecipeError(f"{where}: prompts must be a non-empty tuple of non-empty strings, got {self.prompts!r}")
        if not isinstance(self.new_tokens, int) or self.new_tokens < 1:
            raise RecipeError(f"{where}: new_tokens must be an integer >= 1, got {self.new_tokens!r}")
        unknown = [v for v in self.variants if v not in DECODER_VARIANTS]
        if unknown:
            raise RecipeError(f"{where}: variants {unknown} are not among {', '.join(DECODER_VARIANTS)}")

    @property
    def gguf_path(self) -> Path:
        return self.gguf if self.gguf.is_absolute() else PROJECT_ROOT / self.gguf

    def source_sha256(self) -> str:
        return "" if self.path is None else hashlib.sha256(self.path.read_bytes()).hexdigest()


def default_recipes_dir() -> Path:
    """models/ of onnxport's checkout (the demo recipes), or ./models where onnxport is installed (project.py)."""
    return PROJECT_ROOT / "models"


def discover(recipes_dir: Path) -> dict[str, Path]:
    """Recipe name -> module file, for every public module in the folder."""
    if not recipes_dir.is_dir():
        raise RecipeError(
            f"recipes folder {recipes_dir} does not exist; pass --recipes DIR, or make a project "
            "folder with a recipe template: onnxport init DIR"
        )
    return {p.stem: p for p in sorted(recipes_dir.glob("*.py")) if not p.name.startswith("_")}


def load_recipe(name: str, path: Path) -> Recipe:
    """Import one recipe module and return its RECIPE, or say clearly why not."""
    recipe = load_any_recipe(name, path)
    if not isinstance(recipe, Recipe):
        raise RecipeError(f"recipe {name!r} in {path} is a decoder recipe; build it with onnxport build --recipes")
    return recipe


def load_any_recipe(name: str, path: Path) -> Recipe | DecoderRecipe:
    """Import one recipe module and return its RECIPE, a model's or a decoder's, or say clearly why not."""
    # The file name is the model's name in the repository, its URLs and its exports: the one name
    # rule holds before any of the recipe's code runs.
    problem = name_problem(name)
    if problem is not None:
        raise RecipeError(
            f"recipe file {path}: the name {name!r} (the file name) is not allowed ({problem}): "
            f"{RULE_TEXT}; rename the file and its RECIPE's name"
        )
    module_name = f"onnxport_recipe_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise RecipeError(f"recipe {name!r}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # any error in user code becomes one clear line
        sys.modules.pop(module_name, None)
        where = ""
        if isinstance(exc, SyntaxError):
            where = f" (line {exc.lineno})"
        raise RecipeError(f"recipe {name!r} in {path} failed to load{where}: {type(exc).__name__}: {exc}") from exc
    recipe = getattr(module, "RECIPE", None)
    if not isinstance(recipe, (Recipe, DecoderRecipe)):
        raise RecipeError(f"recipe {name!r} in {path} defines no RECIPE = Recipe(...) or DecoderRecipe(...)")
    if recipe.name != name:
        raise RecipeError(f"recipe in {path} is named {recipe.name!r}; expected {name!r} (the file name)")
    return dataclasses.replace(recipe, path=path)
