"""The packages (and versions) that make a model: all of them decide the build key, only those a model's build
used go in its manifest entry (`provenance.tools`), so minilm's page does not list LightGBM and XGBoost."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from onnxport import __version__

# Every package whose version may change a build's bytes: a new version of any of them builds again.
TOOLS = (
    "onnx",
    "onnxruntime",
    "onnxconverter-common",
    "skl2onnx",
    "scikit-learn",
    "torch",
    "numpy",
    "transformers",
    "lightgbm",
    "xgboost-cpu",
    "onnxmltools",
)
# What every build runs: the checker and shape inference, the sessions that judge each variant, fp16 conversion.
EVERY_BUILD = ("onnx", "onnxruntime", "onnxconverter-common", "numpy")
# The exporter of each source framework (convert/intake/export.py, export_trees.py), beside the framework itself.
EXPORTERS = {
    "pytorch": ("torch",),
    "sklearn": ("scikit-learn", "skl2onnx"),
    "lightgbm": ("lightgbm", "onnxmltools"),
    "xgboost": ("xgboost", "xgboost-cpu", "onnxmltools"),  # whichever of the two distributions is installed
}


def tool_versions() -> dict[str, str]:
    """Every installed package of TOOLS: what the build key is made of."""
    return versions(TOOLS)


def build_tools(framework: str | None = None, recipe_path: Path | None = None) -> dict[str, str]:
    """The packages this model's build used: those of every build, the framework's exporter (none for an ONNX
    file), and the packages the recipe file itself imports (a dataset's scikit-learn, minilm's transformers)."""
    names = [*EVERY_BUILD, *EXPORTERS.get(framework or "", ())]
    if recipe_path is not None:
        names += recipe_packages(recipe_path)
    return versions(names)


def versions(names: Iterable[str]) -> dict[str, str]:
    """{"onnxport": version, name: version...} for each name installed, in the order named, once each."""
    found = {"onnxport": __version__}
    for name in dict.fromkeys(names):
        try:
            found.setdefault(name, metadata.version(name))
        except metadata.PackageNotFoundError:
            pass
    return found


def recipe_packages(path: Path) -> list[str]:
    """The installed distributions the recipe file imports (anywhere in it: recipes import inside load()),
    sorted; the standard library, onnxport and the recipe's own folder are not distributions."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError, ValueError):
        return []  # the recipe was loaded already: a file that no longer parses records no more than the rest
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module.split(".")[0])
    owners = _distributions_by_module()
    return sorted({d for m in modules for d in owners.get(m, ()) if d != "onnxport"})


@functools.cache
def _distributions_by_module() -> dict[str, tuple[str, ...]]:
    """Top-level module -> the distributions that install it ("sklearn" -> ("scikit-learn",))."""
    return {module: tuple(dict.fromkeys(dists)) for module, dists in metadata.packages_distributions().items()}
