"""onnxport: export once, run anywhere, and prove it.

Recipes import their contract from here: `from onnxport import Recipe, SourceModel, Tolerance`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Recipe", "SourceModel", "Tolerance", "__version__"]

if TYPE_CHECKING:
    from onnxport.recipe import Recipe, SourceModel, Tolerance


def __getattr__(name: str) -> Any:
    # Lazy, so that `onnxport --help` and `import onnxport` do not import numpy.
    if name in ("Recipe", "SourceModel", "Tolerance"):
        from onnxport import recipe

        return getattr(recipe, name)
    raise AttributeError(f"module 'onnxport' has no attribute {name!r}")
