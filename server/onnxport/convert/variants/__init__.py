"""How each variant is made: one module per row of onnxport/variants.py, named by the row's `maker`.

A module has `make(prepared, keep_float) -> (model, settings)`, which raises VariantSkipped when the variant
would be the fp32 model again; `candidates(model)`, the nodes its fallback search may name, when its row's
rescue is "weight readers"; `require_work(model)`, raising VariantSkipped when there is nothing to make, when
its row's calibration is "real" (asked before it is skipped for want of real inputs). The modules import
nothing of this package: the row names its module, and load() finds it, so adding a variant is its row and its
module (docs/development.md "Adding one")."""

from __future__ import annotations

import importlib
from types import ModuleType

from onnxport.variants import Variant


def load(row: Variant) -> ModuleType:
    """The module that makes `row`'s variant."""
    return importlib.import_module(f"{__name__}.{row.maker}")
