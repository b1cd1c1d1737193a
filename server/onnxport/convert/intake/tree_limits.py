"""The counts a LightGBM or XGBoost model file declares, checked against the import's limits before the file
reaches its library.

The libraries trust what a file declares: LightGBM sizes its arrays by `num_leaves` and `num_class`, and reads
a split's feature, a child or a category by the index the file gives, unchecked; XGBoost does the same with its
children and split indices, and its JSON reader recurses with the nesting. A crafted file then crashes the
process (SIGSEGV, SIGABRT) or allocates gigabytes from a few bytes. So every count is held to a limit (settings
`import_max_tree_*`, generous for real models), every array to the length its count says, and every index to
its range. A refusal is a UsageError (exit 2) of one line naming the file, the field, the limit and what came.

lightgbm_text.py reads LightGBM's text format, xgboost_document.py XGBoost's JSON and UBJSON; both call here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from onnxport.errors import UsageError

# XGBoost's documents nest about 8 deep (learner > gradient_booster > model > trees > [i] > tree_param > key);
# the format's depth does not grow with the model, so this is a constant, not a setting.
MAX_NESTING = 64


@dataclass(frozen=True)
class TreeLimits:
    """The most a tree model file may declare. Each is a setting (serving/config/table.py), named in refusals."""

    classes: int = 10_000  # ImageNet has 1,000; a multiclass tree model has one tree per class per iteration
    trees: int = 1_000_000  # e.g. 10,000 boosting rounds of 100 classes
    leaves: int = 1_000_000  # per tree; LightGBM caps num_leaves at 131,072, XGBoost's depth 20 is 1,048,576
    features: int = 1_000_000  # wide sparse data (hashed text) has 2^20; the sample row is 4 MB at the limit
    file_bytes: int = 1 << 30  # reading a 1 GiB file takes a few GB in the library: the largest real ones fit

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> TreeLimits:
        """The limits from the loaded settings; a setting missing from values keeps its default."""
        return cls(**{field: values[name] for field, name in SETTINGS.items() if name in values})


# Each limit's setting (serving/config/table.py declares them, with the same defaults: a test holds them equal).
SETTINGS = {
    "classes": "import_max_tree_classes",
    "trees": "import_max_trees",
    "leaves": "import_max_tree_leaves",
    "features": "import_max_tree_features",
    "file_bytes": "import_max_tree_file_bytes",
}


class Checker:
    """The refusals of one file, each one line naming it."""

    def __init__(self, path: Path, limits: TreeLimits):
        self.path, self.limits = path, limits

    def refuse(self, why: str) -> UsageError:
        return UsageError(f"{self.path}: {why}; refusing it before the library reads it")

    def file_size(self) -> None:
        size = self.path.stat().st_size
        if size > self.limits.file_bytes:
            raise self.over("the file's size in bytes", size, "file_bytes")

    def over(self, field: str, found: int, limit: str) -> UsageError:
        """A count past its limit: the field, what came, the limit and its setting."""
        value = getattr(self.limits, limit)
        return UsageError(
            f"{self.path}: {field} is {found:,}, more than the import's limit of {value:,} "
            f"(setting {SETTINGS[limit]}); refusing it before the library reads it"
        )

    def count(self, field: str, value: Any, limit: str, least: int = 0) -> int:
        """A declared count: a whole number from least to its limit."""
        number = self.whole(field, value)
        if number < least:
            raise self.refuse(f"{field} is {number}; expected {least} or more")
        if number > getattr(self.limits, limit):
            raise self.over(field, number, limit)
        return number

    def whole(self, field: str, value: Any) -> int:
        """A whole number as the file writes one (digits, or a JSON integer); anything else is refused."""
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return int(value)
        text = value.strip() if isinstance(value, str) else ""
        if text.lstrip("-").isascii() and text.lstrip("-").isdigit() and len(text) < 20:
            return int(text)
        raise self.refuse(f"{field} is {str(value)[:40]!r}; expected a whole number")

    def length(self, field: str, values: np.ndarray, expected: int, because: str) -> None:
        if len(values) != expected:
            raise self.refuse(f"{field} has {len(values):,} entries; {because} needs {expected:,}")

    def in_range(self, field: str, values: np.ndarray, low: int, high: int, because: str) -> None:
        """Every value in [low, high): the first one outside is named, with its position."""
        outside = np.flatnonzero((values < low) | (values >= high))
        if outside.size:
            at = int(outside[0])
            raise self.refuse(f"{field}[{at}] is {values[at]}; {because} allows {low} to {high - 1}")

    def single_parents(self, where: str, children: np.ndarray, nodes: int) -> None:
        """Children (internal node indices, root 0 excluded) each named once: a tree, never a loop or a share."""
        counts = np.bincount(children, minlength=nodes)
        bad = np.flatnonzero(counts[1:] > 1)
        if counts[0] or bad.size:
            node = 0 if counts[0] else int(bad[0]) + 1
            raise self.refuse(
                f"{where}: node {node} is the child of {int(counts[node])} nodes; a tree's root has "
                "no parent and every other node one"
            )


def integers(field: str, values: Any, checker: Checker) -> np.ndarray:
    """An array of whole numbers (int64), or a refusal naming the field."""
    try:
        array = np.asarray(values)
        if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
            array = array.astype(np.int64)
        if array.dtype.kind not in "iu" and array.size:
            array = np.array([checker.whole(field, v) for v in array.tolist()], np.int64)
        return array.astype(np.int64).reshape(-1)
    except (ValueError, TypeError, OverflowError):
        raise checker.refuse(f"{field} is not a list of whole numbers") from None
