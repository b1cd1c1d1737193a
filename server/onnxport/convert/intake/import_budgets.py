"""The budgets `onnxport import` holds a file to before its parsers run, as one value the request carries:
the counts a tree model file declares (tree_limits.py), the bytes the --inputs and --calibration files declare
(data_budget.py), and the size of an ONNX file's free texts (model_texts.py). Each is a setting
(serving/config/table.py, which convert does not import: the request hands the loaded settings over)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from onnxport.convert.intake import data_budget, model_texts
from onnxport.convert.intake.tree_limits import TreeLimits


@dataclass(frozen=True)
class ImportBudgets:
    trees: TreeLimits = field(default_factory=TreeLimits)
    data_bytes: int = data_budget.DATA_BUDGET
    text_bytes: int = model_texts.TEXT_BUDGET

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> ImportBudgets:
        """From the loaded settings; one missing keeps its default."""
        return cls(
            trees=TreeLimits.from_settings(values),
            data_bytes=values.get(data_budget.SETTING, data_budget.DATA_BUDGET),
            text_bytes=values.get(model_texts.SETTING, model_texts.TEXT_BUDGET),
        )
